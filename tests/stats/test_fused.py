"""The compiled one-pass path agrees with the eager reductions (one compile, ~10-20 s)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hookscope import Monitor
from hookscope.stats import Plan, fetch, reduce_tensor, summarize


@pytest.mark.slow
@pytest.mark.usefixtures("eager")  # on CPU the native kernel comes before the compiled one
def test_fused_matches_eager_and_monitor_uses_it() -> None:
    pytest.importorskip("torch._inductor")
    x = torch.randn(3, 50) * 2 + 1
    x[x.abs() < 0.2] = 0.0
    x[0, 4] = math.nan
    eager = reduce_tensor(x, Plan(zeros="count"))
    fused = reduce_tensor(x, Plan(zeros="count", fused=True))
    assert fused.packed is not None  # the compiled path was taken
    fetch([eager, fused])
    a, b = summarize(eager), summarize(fused)
    assert a.keys() == b.keys()
    for name in a:
        if math.isnan(a[name]):
            assert math.isnan(b[name]), name
        else:
            assert b[name] == pytest.approx(a[name], rel=1e-5), name
    assert b["nan_count"] == 1.0

    model = nn.Sequential(nn.Linear(6, 6), nn.ReLU())
    inputs = torch.randn(4, 6)
    frames = []
    for flag in (False, True):
        with Monitor(model, fused=flag) as mon, torch.no_grad():
            model(inputs)
            mon.step()
        frames.append(mon.to_pandas().set_index(["module", "stat"]).value)
    assert frames[1].to_dict() == pytest.approx(frames[0].to_dict(), rel=1e-5)
