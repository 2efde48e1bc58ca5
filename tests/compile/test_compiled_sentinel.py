"""``every=N`` on a torch.compile'd model: the NaN/Inf sentinel reads the graph's rows, no recompile."""

from __future__ import annotations

import math

import pytest
import torch
import torch._dynamo as dynamo
from torch import nn

import hookscope
from hookscope.monitor.records import NonFinite


def _blocks() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 1))


def _run(every: int, compiled: bool) -> tuple[NonFinite | None, list[int]]:
    torch.manual_seed(0)
    model = _blocks()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(6, 4), torch.randn(6, 1)
    written = []
    with hookscope.Monitor(model, every=every) as mon:
        run = torch.compile(model, fullgraph=True) if compiled else model
        for step in range(9):
            if step == 1 and compiled:
                dynamo.config.error_on_recompile = True  # the flips of `every` must not retrace
            saved = model[0].weight[0, 0].item()
            if step == 7:
                with torch.no_grad():
                    model[0].weight[0, 0] = math.nan
            opt.zero_grad()
            loss = nn.functional.mse_loss(run(x), y)
            loss.backward()
            if torch.isfinite(loss):
                opt.step()
            with torch.no_grad():
                model[0].weight[0, 0] = saved
            if mon.step() is not None:
                written.append(step)
    return mon.first_nonfinite, written


@pytest.mark.slow
def test_compiled_every_finds_the_nan_at_its_step_without_recompiling() -> None:
    eager, _ = _run(1, compiled=False)
    dynamo.reset()
    try:
        compiled, written = _run(5, compiled=True)
    finally:
        dynamo.config.error_on_recompile = False
    assert eager is not None and (eager.step, eager.phase, eager.module) == (7, "forward", "0")
    assert compiled == eager
    assert written == [0, 5, 7]
