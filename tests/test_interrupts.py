"""Ctrl-C at any moment inside a public call leaves the model and torch as they were.

Each trial raises SIGINT at the start of one Python function the call runs
(chosen by a seeded draw; `tests.interrupts`), then checks parameters,
buffers, ``.grad``, devices, dtypes, flags, every hook dict and global hook,
torch's global switches and the SIGINT handler against a snapshot, and that
the next, uninterrupted call works. The fast subset draws a few points per
call; the slow one many, and also interrupts by timer.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn

import hookscope
from tests.interrupts import (
    count_calls,
    differences,
    interrupt_after,
    interrupt_at_call,
    snapshot,
)


class Net(nn.Module):
    """Convolution, BatchNorm (buffers), dropout (RNG), a shared layer, a user hook."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(4 * 6 * 6, 5)
        self.head = nn.Linear(5, 5)
        self.again = self.head  # one module under two names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.drop(torch.relu(self.bn(self.conv(x))))
        return self.again(torch.relu(self.fc(y.flatten(1))))


@pytest.fixture(autouse=True)
def _grad_mode_back() -> Iterator[None]:
    """A failed trial must not fail the next test through grad mode."""
    yield
    torch.set_grad_enabled(True)


def make() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = Net()
    model(torch.randn(2, 3, 6, 6)).sum().backward()  # every parameter holds a .grad
    model.fc.register_forward_hook(lambda *_: None)  # a hook of the user's own
    return model, torch.randn(2, 3, 6, 6)


def _session(model: nn.Module, x: torch.Tensor) -> None:
    with hookscope.session(model, detect_bypass=True) as s:
        s.add_forward_hook(lambda *_: None)
        s.add_forward_pre_hook(lambda *_: None, "conv")
        s.add_backward_hook(lambda *_: None, "fc")
        s.add_grad_hook(lambda *_: None)
        model(x)  # (the body's own context managers would be the user's to guard)


def _capture(model: nn.Module, x: torch.Tensor) -> None:
    with hookscope.capture(model) as cache:
        model(x)
    assert cache is not None


def _monitor(model: nn.Module, x: torch.Tensor) -> None:
    inp = x.clone().requires_grad_()
    with hookscope.Monitor(model, params=False) as mon:
        for _ in range(2):
            torch.autograd.grad(model(inp).sum(), inp)  # leaves every .grad as it is
            mon.step()


CALLS: dict[str, tuple[bool, Callable[[nn.Module, torch.Tensor], Any]]] = {
    # name: (train mode, the call); calls whose body is the user's own run in eval mode
    "session": (False, _session),
    "capture": (False, _capture),
    "monitor": (False, _monitor),
    "summary": (True, lambda m, x: hookscope.summary(m, x)),
    "summary_cpu": (True, lambda m, x: hookscope.summary(m, x, device="cpu")),
    "doctor": (True, lambda m, x: hookscope.doctor(m, x, backward=True)),
    "compare": (True, lambda m, x: hookscope.compare(m, torch.float64, x, backward=True)),
    "record": (True, lambda m, x: hookscope.record(m, x, backward=True)),
}


#: A SIGINT delivered while the garbage collector closes a generator is reported as
#: "Exception ignored" and lost, as it would be outside the tests.
lost_in_gc = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def _trials(name: str, points: int, seed: int, signum: int = signal.SIGINT) -> None:
    train, call = CALLS[name]
    model, x = make()
    model.train(train)
    before = snapshot(model)
    run: Callable[[], Any] = lambda: call(model, x)  # noqa: E731
    run()  # warm: imports, caches
    assert not differences(before, snapshot(model)), "the call itself changed the model"
    total = count_calls(run)
    rng = random.Random(seed)
    tail = range(total * 4 // 5, total + 1)  # the tear-down: half of the points land there
    picked = set(rng.sample(range(1, total + 1), min(points // 2, total)))
    picked |= set(rng.sample(tail, min(points - points // 2, len(tail))))
    for n in sorted(picked):
        interrupt_at_call(run, n, signum)
        found = differences(before, snapshot(model))
        assert not found, (
            f"{name}: signal {signum} at call {n} of {total} (seed {seed}) left: {found[:6]}"
        )
        run()  # the next call works
        assert not differences(before, snapshot(model)), f"{name}: next call after call {n}"


@lost_in_gc
@pytest.mark.parametrize("name", sorted(CALLS))
def test_interrupt_leaves_everything_as_it_was(name: str) -> None:
    _trials(name, points=12, seed=1)


def _raise_interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


@lost_in_gc
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_timer_handler_that_raises(name: str) -> None:
    """A watchdog's SIGALRM handler that raises KeyboardInterrupt is held like Ctrl-C."""
    previous = signal.signal(signal.SIGALRM, _raise_interrupt)
    try:
        _trials(name, points=12, seed=1, signum=signal.SIGALRM)
        assert signal.getsignal(signal.SIGALRM) is _raise_interrupt
    finally:
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.slow
@lost_in_gc
@pytest.mark.parametrize("name", sorted(CALLS))
def test_interrupt_anywhere_many_points(name: str) -> None:
    _trials(name, points=400, seed=2)


@pytest.mark.slow
@lost_in_gc
@pytest.mark.parametrize("name", sorted(CALLS))
def test_interrupt_by_timer(name: str) -> None:
    train, call = CALLS[name]
    model, x = make()
    model.train(train)
    before = snapshot(model)
    call(model, x)
    start = time.perf_counter()
    call(model, x)
    took = time.perf_counter() - start
    rng = random.Random(3)
    for trial in range(150):
        delay = rng.uniform(1e-6, took * 1.2)
        interrupt_after(lambda: call(model, x), delay)
        found = differences(before, snapshot(model))
        assert not found, f"{name}: SIGINT after {delay:.6f} s (trial {trial}) left: {found[:6]}"
        call(model, x)


def test_a_session_closed_from_another_thread() -> None:
    model, x = make()
    s = hookscope.session(model).__enter__()
    s.add_forward_hook(lambda *_: None)
    worker = threading.Thread(target=s.close)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert not model.conv._forward_hooks
    with hookscope.session(model) as again:  # and the handler still works in the main thread
        again.add_forward_hook(lambda *_: None)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_handler_is_the_users_again() -> None:
    """Between calls, SIGINT's handler is what it was: hookscope holds it only inside."""
    model, x = make()
    hookscope.summary(model, x)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda *_: None)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_compare_puts_dynamo_limits_back() -> None:
    """Ctrl-C while compare raises or restores dynamo's recompile limits leaves them as they were."""
    from hookscope.compare.compiled import compiled_run

    compiled = torch.compile(nn.Linear(2, 2))
    config = torch._dynamo.config

    def limits() -> tuple[Any, ...]:
        return (
            config.recompile_limit,
            config.accumulated_recompile_limit,
            config.skip_nnmodule_hook_guards,
        )

    def run() -> None:
        with compiled_run(compiled, traced=True):
            len(())

    before = limits()
    total = count_calls(run)
    for n in range(1, total + 1):
        interrupt_at_call(run, n)
        assert limits() == before, f"interrupt at call {n} of {total} left {limits()}"
