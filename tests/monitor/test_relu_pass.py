"""A ReLU's output statistics taken in the pass over its input (`Collector._output_reduction`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch
from torch import nn

import hookscope
from hookscope.stats import native
from hookscope.zoo import resnet50_like

pytestmark = pytest.mark.skipif(not native.available(), reason="no C compiler for the kernel")

Stats = dict[tuple[str, str, str, str], float]


class Block(nn.Module):
    """Linear -> ReLU (out of place) -> Linear -> in-place ReLU, with optional mischief."""

    def __init__(self, bump: bool = False) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act1 = nn.ReLU()
        self.fc2 = nn.Linear(32, 32)
        self.act2 = nn.ReLU(inplace=True)
        self.bump = bump

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc2(self.act1(self.fc1(x)))
        if self.bump:
            h.add_(1.0)  # changes the tensor between its producer and the ReLU
        return self.act2(h)


def steps(model: nn.Module, inputs: list[torch.Tensor]) -> list[Stats]:
    """Records of one monitored inference step per input."""
    got = []
    with hookscope.Monitor(model, keep=False) as mon:
        for x in inputs:
            with torch.no_grad():
                model(x)
            result = mon.step()
            got.append({(r.phase, r.module, r.tensor, r.stat): r.value for r in result.records})
    return got


def eager(model: nn.Module, x: torch.Tensor) -> Stats:
    """The same records with the kernel off: every tensor reduced on its own."""
    native.set_enabled(False)
    try:
        return steps(model, [x])[0]
    finally:
        native.set_enabled(True)


@contextmanager
def counted() -> Iterator[dict[str, int]]:
    """Counts kernel passes: plain (``moments``) and with the ReLU part (``moments_relu``)."""
    calls = {"moments": 0, "moments_relu": 0}
    originals = {name: getattr(native, name) for name in calls}

    def counting(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return originals[name](*args, **kwargs)

        return call

    for name in calls:
        setattr(native, name, counting(name))
    try:
        yield calls
    finally:
        for name, fn in originals.items():
            setattr(native, name, fn)


def assert_close(got: Stats, want: Stats) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if math.isnan(value):
            assert math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


def test_resnet_relu_outputs_come_from_the_norm_pass_and_match_eager() -> None:
    torch.manual_seed(0)
    model = resnet50_like().eval()
    x = torch.randn(2, 3, 64, 64)
    with counted() as calls:
        got = steps(model, [x, x])
    # 158 monitored outputs a forward. Step 1 learns which outputs feed a ReLU;
    # in step 2 each of those passes also serves the ReLU, which reads nothing.
    # (The ReLU after each residual addition still reads its own output.)
    assert calls["moments_relu"] >= 17
    assert calls["moments"] + calls["moments_relu"] == 2 * 158 - calls["moments_relu"]
    want = eager(model, x)
    assert_close(got[0], want)
    assert_close(got[1], want)


@pytest.mark.parametrize("bump", [False, True])
def test_in_place_and_out_of_place_relu_match_eager(bump: bool) -> None:
    torch.manual_seed(0)
    model = Block(bump).eval()
    x = torch.randn(64, 16)
    got = steps(model, [x, x, x])
    want = eager(model, x)
    for step in got:
        assert_close(step, want)
    assert got[2][("forward", "act2", "output", "min")] >= 0.0


def test_nan_reaching_the_relu_is_counted_exactly() -> None:
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(64, 16)
    poisoned = x.clone()
    poisoned[3, :] = float("nan")  # row 3 is NaN through fc1, act1 (NaN stays NaN), fc2, act2
    got = steps(model, [x, poisoned])  # the first step taught the monitor about both ReLUs
    for relu in ("act1", "act2"):
        assert got[1][("forward", relu, "output", "nan_count")] == 32.0
    want = eager(model, poisoned)
    assert_close(got[1], want)
