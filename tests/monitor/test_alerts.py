"""Alert rules, on synthetic records and on real models."""

from __future__ import annotations

import random
import statistics
from collections import deque

import torch
from torch import nn

from hookscope import Monitor
from hookscope.monitor import Alert, Record, Thresholds
from hookscope.monitor.alerts import AlertRules


def norm(value: float, module: str = "m") -> Record:
    return Record("param", module, "grad", "norm", value)


def test_exploding_above_bound_fires_once_per_streak() -> None:
    rules = AlertRules(Thresholds(explode_above=100.0))
    fired = [rules.check(step, [norm(v)]) for step, v in enumerate([1, 500, 600, 2, 700])]
    assert fired[1] == [Alert(1, "m", "grad", 500.0, "exploding", "param")]
    assert fired[2] == []  # still exploding: no repeat
    assert fired[4] == [Alert(4, "m", "grad", 700.0, "exploding", "param")]  # re-armed at step 3


def test_exploding_jump_against_running_median() -> None:
    rules = AlertRules(Thresholds(explode_jump=10.0, min_history=5))
    values = [1.0, 1.2, 0.9, 1.1, 1.0, 11.5]  # median of the first five is 1.0
    alerts = [a for step, v in enumerate(values) for a in rules.check(step, [norm(v)])]
    assert alerts == [Alert(5, "m", "grad", 11.5, "exploding", "param")]


def test_jump_uses_the_median_of_the_last_window_values() -> None:
    """Over a long run with repeated values, as `statistics.median` of a rolling window says."""
    rules = AlertRules(Thresholds(explode_jump=1.5, window=7, min_history=3))
    gen = random.Random(3)
    values = [float(gen.choice([1, 2, 2, 3, 5, 8, 13])) for _ in range(400)]
    history: deque[float] = deque(maxlen=7)
    expected, active = [], False
    for step, value in enumerate(values):
        jump = len(history) >= 3 and value > 1.5 * statistics.median(history)
        if jump and not active:
            expected.append(step)
        active = jump
        history.append(value)
    got = [a.step for step, v in enumerate(values) for a in rules.check(step, [norm(v)])]
    assert len(expected) > 20
    assert got == expected


def test_no_jump_before_enough_history() -> None:
    rules = AlertRules(Thresholds(min_history=5))
    assert [rules.check(s, [norm(v)]) for s, v in enumerate([1.0, 50.0])] == [[], []]


def test_vanishing_after_n_steps() -> None:
    rules = AlertRules(Thresholds(vanish_below=1e-6, vanish_steps=3))
    fired = [rules.check(step, [norm(1e-9)]) for step in range(4)]
    assert fired[:2] == [[], []]
    assert fired[2] == [Alert(2, "m", "grad", 1e-9, "vanishing", "param")]
    assert fired[3] == []


def test_dead_and_nonfinite() -> None:
    rules = AlertRules(Thresholds())
    records = [
        Record("forward", "relu", "output", "zero_frac", 0.995),
        Record("forward", "fc", "output", "nan_count", 2.0),
        Record("forward", "fc", "output", "inf_count", 1.0),
    ]
    assert rules.check(0, records) == [
        Alert(0, "relu", "output", 0.995, "dead", "forward"),
        Alert(0, "fc", "output", 3.0, "nonfinite", "forward"),
    ]


def test_dead_relu_in_a_real_model() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    with torch.no_grad():
        model[0].bias.fill_(-100.0)
    with Monitor(model) as mon, torch.no_grad():
        model(torch.randn(16, 4))
        mon.step()
    assert [(a.rule, a.module, a.value) for a in mon.alerts] == [("dead", "1", 1.0)]


def test_exploding_activation_in_a_real_model() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    with torch.no_grad():
        model[1].weight.mul_(1e6)
    with Monitor(model, explode_above=1e3, grads=False, params=False) as mon, torch.no_grad():
        model(torch.ones(2, 4))
        mon.step()
    assert [(a.rule, a.module) for a in mon.alerts] == [("exploding", "1")]
