"""How many kernel passes a monitored step takes, and that fewer passes change no statistic.

A module that returns its input as it is (eval ``Dropout``) reuses the
reduction already taken of that tensor; an output whose mean cancelled last
step (a layer norm's) is taken around 0.0 at once instead of in a second
pass; gradients need no shift at all.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import hookscope
from hookscope.stats import native

pytestmark = pytest.mark.skipif(not native.available(), reason="no C compiler for the kernel")

Stats = dict[tuple[str, str, str, str], float]


class Net(nn.Module):
    """Linear -> eval Dropout (returns its input) -> LayerNorm (mean 0) -> Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.drop = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(256)
        self.fc2 = nn.Linear(256, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.norm(self.drop(self.fc1(x))))


@contextmanager
def counted_passes() -> Iterator[list[int]]:
    """Count calls of the kernel wrapper (each is one read of a tensor)."""
    calls = [0]
    real = native.moments

    def counting(tensor: torch.Tensor, shift: float | None = None) -> Any:
        calls[0] += 1
        return real(tensor, shift)

    native.moments = counting  # type: ignore[assignment]
    try:
        yield calls
    finally:
        native.moments = real  # type: ignore[assignment]


def monitored_steps(model: nn.Module, x: torch.Tensor, steps: int) -> tuple[list[Stats], list[int]]:
    """Records and kernel passes of ``steps`` inference steps on the same input."""
    got, passes = [], []
    with hookscope.Monitor(model, keep=False) as mon, counted_passes() as calls:
        for _ in range(steps):
            before = calls[0]
            with torch.no_grad():
                model(x)
            result = mon.step()
            passes.append(calls[0] - before)
            got.append({(r.phase, r.module, r.tensor, r.stat): r.value for r in result.records})
    return got, passes


def test_identity_output_and_mean_free_output_cost_one_pass_each() -> None:
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(32, 64)
    (first, second, third), passes = monitored_steps(model, x, 3)
    # step 0: fc1, norm (twice: its mean cancelled), fc2; the dropout reads nothing
    assert passes[0] == 4
    # later steps take the norm's output around 0.0 at once
    assert passes[1] == passes[2] == 3
    assert first == second == third  # the same input gives the same statistics, bit for bit
    drop = {s: v for (_, m, _, s), v in first.items() if m == "drop"}
    assert drop == {s: v for (p, m, _, s), v in first.items() if (p, m) == ("forward", "fc1")}
    with torch.no_grad():
        h = model.norm(model.fc1(x)).double().numpy()
    norm = {s: v for (_, m, _, s), v in second.items() if m == "norm"}
    assert abs(norm["mean"] - h.mean()) < 1e-7
    assert math.isclose(norm["std"], h.std(), rel_tol=1e-6)


def test_training_dropout_output_is_reduced_on_its_own() -> None:
    torch.manual_seed(0)
    model = Net().train()
    x = torch.randn(32, 64)
    with hookscope.Monitor(model, keep=False, zeros="all") as mon:
        model(x).sum().backward()
        records = {(r.phase, r.module, r.tensor, r.stat): r.value for r in mon.step().records}
    assert records[("forward", "drop", "output", "zero_frac")] > 0.05  # dropped elements
    assert records[("forward", "fc1", "output", "zero_frac")] == 0.0


def test_gradient_norms_taken_without_a_shift_match_numpy() -> None:
    torch.manual_seed(0)
    model = Net().train()
    x = torch.randn(32, 64) + 3.0  # gradients with a mean far from 0 as well as near it
    grads: dict[str, np.ndarray] = {}
    hooks = [
        model.fc2.register_full_backward_hook(
            lambda _m, _gi, go: grads.__setitem__("fc2", go[0].double().numpy())
        )
    ]
    with hookscope.Monitor(model, keep=False) as mon:
        (model(x) * 1e3 + 7.0).square().mean().backward()
        records = {(r.phase, r.module, r.tensor, r.stat): r.value for r in mon.step().records}
    for hook in hooks:
        hook.remove()
    norm = records[("backward", "fc2", "output", "norm")]
    assert math.isclose(norm, float(np.linalg.norm(grads["fc2"])), rel_tol=1e-6)
    weight = model.fc1.weight.grad
    assert weight is not None
    expected = float(np.linalg.norm(weight.double().numpy()))
    assert math.isclose(records[("param", "fc1.weight", "grad", "norm")], expected, rel_tol=1e-6)
