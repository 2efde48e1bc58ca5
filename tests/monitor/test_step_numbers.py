"""``Monitor.step(step=N)``: records, alerts, the NaN origin and sinks carry the trainer's number."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from hookscope import Monitor, UsageError
from hookscope.sinks.jsonl import JsonlSink, read_jsonl


def test_given_steps_reach_results_alerts_origin_and_sinks(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    path = tmp_path / "m.jsonl"
    with Monitor(model, sinks=[JsonlSink(path)]) as mon:
        model(torch.ones(1, 3)).sum().backward()
        mon.step(step=10)
        with torch.no_grad():
            model[2].weight[0, 0] = math.nan
        model(torch.ones(1, 3)).sum().backward()
        mon.step(step=12)
        model(torch.ones(1, 3))
        mon.step()  # continues from the last number given
    assert [r.step for r in mon.results] == [10, 12, 13]
    assert [line["step"] for line in read_jsonl(path)] == [10, 12, 13]
    assert mon.first_nonfinite is not None and mon.first_nonfinite.step == 12
    assert mon.first_nonfinite.module == "2"
    assert {a.step for a in mon.alerts if a.rule == "nonfinite"} >= {12}
    assert set(mon.to_pandas().step) == {10, 12, 13}


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_bad_step_is_a_usage_error_showing_the_value(bad: object) -> None:
    with Monitor(nn.Linear(2, 2)) as mon, pytest.raises(UsageError, match=repr(bad)):
        mon.step(step=bad)  # type: ignore[arg-type]
