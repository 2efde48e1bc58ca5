"""Infinities of both signs and tiny values, on the kernel and on eager ops, against float64.

``rms`` of ``[1, inf, -inf, 2]`` is inf (NumPy's answer), not NaN; gradients
of 1e-40 (denormal in float32) or 1e-25 (whose float32 squares underflow)
keep their norm and RMS.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import hookscope
from hookscope.stats import (
    GRAD_STATS,
    Plan,
    fetch,
    grad_summary,
    plan_for,
    reduce_tensor,
    summarize,
)


def _numpy_rms(t: torch.Tensor) -> float:
    a = t.double().numpy().ravel()
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.mean(a * a)))


@pytest.mark.parametrize("size", [4, 300_000])
def test_rms_of_plus_and_minus_inf_is_inf(path: str, size: int) -> None:
    t = torch.ones(size)
    t[1], t[2] = math.inf, -math.inf
    red = reduce_tensor(t, Plan(zeros="count"))
    fetch([red])
    got = summarize(red)
    assert _numpy_rms(t) == math.inf
    assert got["rms"] == math.inf
    assert got["norm"] == math.inf
    assert got["absmax"] == math.inf
    assert math.isnan(got["mean"])  # inf + -inf, as NumPy
    assert got["inf_count"] == 2.0


@pytest.mark.parametrize("value", [1e-40, 1e-25, 3e-20])
def test_tiny_gradients_keep_their_norm(path: str, value: float) -> None:
    t = torch.full((10,), value)
    ref = t.double()  # float32's value of ``value``, in float64
    red = reduce_tensor(t, plan_for(GRAD_STATS))
    fetch([red])
    got = grad_summary(red)
    assert got["norm"] == pytest.approx(float(torch.linalg.vector_norm(ref)), rel=1e-6, abs=0.0)
    assert got["rms"] == pytest.approx(float(ref.abs().mean()), rel=1e-6, abs=0.0)


def test_monitor_eager_path_reports_denormal_gradients(eager: None) -> None:
    model = nn.Linear(3, 2)
    x = torch.ones(1, 3)
    with hookscope.Monitor(model, stats=["rms"]) as mon:
        y = model(x)
        y.backward(torch.full_like(y, 1e-40))
        result = mon.step()
    assert result is not None
    grads = {(r.module, r.stat): r.value for r in result.records if r.phase == "backward"}
    expected = float(torch.full((1, 2), 1e-40).double().norm())
    assert grads[("", "norm")] == pytest.approx(expected, rel=1e-6, abs=0.0)
    assert grads[("", "rms")] == pytest.approx(expected / math.sqrt(2), rel=1e-6, abs=0.0)
