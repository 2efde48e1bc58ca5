"""`hookscope.stats.cpuops`: the row ops' C++ CPU kernels, and what they hand to Python."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import torch

from hookscope.stats import cpuops, gradrow, native, rowop
from hookscope.stats.rowop import affine_row_op, merge_row_op, move_row_op
from hookscope.stats.traced import empty_rows

_SEED = torch.Generator().manual_seed(1)


@pytest.fixture(autouse=True)
def _cpp() -> Iterator[None]:
    """The C++ kernels registered and on (the test skips where they cannot be built)."""
    if not cpuops.ensure():
        pytest.skip(f"C++ op kernels unavailable: {cpuops.why_unavailable()}")
    yield
    cpuops.set_enabled(True)
    native.set_enabled(True)


def _x() -> torch.Tensor:
    return torch.randn(4, 8, 6, 6, generator=_SEED).to(memory_format=torch.channels_last)


def test_dense_finite_rows_never_reach_python() -> None:
    rows, x = empty_rows(8), _x()
    params = [torch.randn(8, generator=_SEED) for _ in range(3)]
    grads = torch.zeros(2, 4, dtype=torch.float64)
    key = gradrow.register(grads)
    before = cpuops.fallbacks()
    merge_row_op(rows, 0, x, True, True, True)
    merge_row_op(rows, 1, x, True, True, True, True)
    merge_row_op(rows, 2, torch.empty(0), True, True, True)  # only the call counts
    affine_row_op(rows, 3, x, *params, True, True, True, 4)
    move_row_op(rows, 4, 5)
    gradrow.grad_row_add_op(x, key, 1)
    assert cpuops.fallbacks() == before
    gradrow.unregister(key)
    assert rows[2, 0] == 1 and rows[2, 1] == 0
    assert rows[5, 1] == x.numel() and rows[4, 1] == 0
    assert grads[1, 0] == x.numel() and torch.allclose(grads[1, 1], x.double().square().sum())


def test_what_the_kernels_do_not_take_goes_to_the_python_kernels() -> None:
    rows = empty_rows(4)
    before = cpuops.fallbacks()
    merge_row_op(rows, 0, torch.tensor([1.0, float("nan"), float("inf")]), True, True, True)
    merge_row_op(rows, 1, _x()[:, :, ::2], True, True, True)  # not dense
    merge_row_op(rows, 2, torch.arange(6), True, True, True)  # an integer tensor
    move_row_op(rows, 3, 3)  # onto itself
    assert cpuops.fallbacks() == before + 4
    assert rows[0, 7] == 1 and rows[0, 8] == 1  # counted exactly by tensor ops
    assert rows[1, 1] == _x()[:, :, ::2].numel()
    assert rows[2, 2] == 15


def test_a_closed_key_and_a_float32_buffer_take_the_python_path() -> None:
    x = _x()
    wide, narrow = torch.zeros(2, 4, dtype=torch.float64), torch.zeros(2, 4)
    keys = gradrow.register(wide), gradrow.register(narrow)
    gradrow.unregister(keys[0])
    before = cpuops.fallbacks()
    gradrow.grad_row_add_op(x, keys[0], 0)  # the Monitor was closed: nothing is written
    gradrow.grad_row_add_op(x, keys[1], 0)  # tensor ops into a float32 buffer
    gradrow.unregister(keys[1])
    assert cpuops.fallbacks() == before + 2
    assert not wide.any()
    assert narrow[0, 0] == x.numel()


@pytest.mark.parametrize("switch", ["cpuops", "native", "rowop"])
def test_switches_route_every_call_to_python(switch: str) -> None:
    rows, x = empty_rows(1), _x()
    if switch == "cpuops":
        cpuops.set_enabled(False)
    elif switch == "native":
        native.set_enabled(False)
    else:
        rowop.set_kernel_rows(False)
    try:
        assert not cpuops.active()
        before = cpuops.fallbacks()
        merge_row_op(rows, 0, x, True, True, True)
        assert cpuops.fallbacks() == before + 1
    finally:
        rowop.set_kernel_rows(True)
        native.set_enabled(True)
    assert cpuops.active()
    assert rows[0, 1] == x.numel()


def test_an_index_out_of_range_raises_from_the_python_kernel() -> None:
    with pytest.raises(RuntimeError, match="out of bounds"):
        merge_row_op(empty_rows(2), 5, _x(), True, True, True)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_a_build_holds_the_locks_can_still_load() -> None:
    """`prepare` builds on a thread that a fork leaves behind: the child gets fresh locks."""
    with cpuops._lock, native._lock:
        pid = os.fork()
        if pid == 0:  # the child: the thread that held the locks does not exist here
            ok = cpuops._lock.acquire(timeout=5) and native._lock.acquire(timeout=5)
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
