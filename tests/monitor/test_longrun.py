"""Long runs: bounded memory (history, alerts, hook failures) and the NaN/Inf sentinel of ``every``."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn

import hookscope
from hookscope import Monitor
from hookscope.errors import HookWarning, UsageError
from hookscope.hooks import policy
from hookscope.monitor import history
from hookscope.monitor.records import StepResult
from tests.monitor.models import NaNGrad, NaNOut, chain


class ListSink:
    """A sink that keeps what it is given."""

    def __init__(self) -> None:
        self.written: list[StepResult] = []
        self.closed = False

    def write(self, result: StepResult) -> None:
        self.written.append(result)

    def close(self) -> None:
        self.closed = True


def blocks(count: int = 6, width: int = 8) -> nn.Sequential:
    """Linear -> GELU -> LayerNorm blocks (the shape long-run NaN hunts are tested on)."""
    layers: list[nn.Module] = [nn.Linear(4, width)]
    for _ in range(count):
        layers += [nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width)]
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def train(
    model: nn.Module,
    steps: int,
    *,
    nan_at: tuple[int, ...] = (),
    poisoned: nn.Linear | None = None,
    **options: Any,
) -> tuple[Monitor, list[StepResult | None]]:
    """SGD on random data; a NaN weight in ``poisoned`` at the ``nan_at`` steps.

    As a GradScaler does, the optimizer step is skipped when the loss is not
    finite, and the weight is restored afterwards.
    """
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    returned = []
    with Monitor(model, **options) as mon:
        for step in range(steps):
            saved = None
            if step in nan_at and poisoned is not None:
                with torch.no_grad():
                    saved = poisoned.weight[0, 0].clone()
                    poisoned.weight[0, 0] = math.nan
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            if torch.isfinite(loss):
                opt.step()
            if saved is not None:
                with torch.no_grad():
                    poisoned.weight[0, 0] = saved
            returned.append(mon.step())
    return mon, returned


# -- bounded memory ------------------------------------------------------------------


def test_short_run_keeps_every_step_by_default() -> None:
    mon, _ = train(blocks(2), 100)
    assert sorted(mon.to_pandas().step.unique()) == list(range(100))
    assert mon.results_dropped == 0
    assert mon.history == history.DEFAULT_HISTORY >= 100


def test_history_keeps_the_last_steps_and_counts_the_others() -> None:
    sink = ListSink()
    mon, _ = train(blocks(2), 30, history=5, sinks=[sink])
    assert [r.step for r in mon.results] == [25, 26, 27, 28, 29]
    assert sorted(mon.to_pandas().step.unique()) == [25, 26, 27, 28, 29]
    assert mon.results_dropped == 25
    assert [r.step for r in sink.written] == list(range(30))  # sinks get every step


def test_history_stays_bounded_over_a_long_run() -> None:
    model = blocks(2)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    lengths = []
    with Monitor(model, history=7) as mon:
        for _ in range(60):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            mon.step()
            lengths.append(len(mon.results))
    assert max(lengths) == 7
    assert lengths[-1] == 7


def test_history_none_keeps_everything_and_keep_false_nothing() -> None:
    mon, _ = train(blocks(1), 12, history=None)
    assert len(mon.results) == 12
    mon, _ = train(blocks(1), 12, keep=False)
    assert mon.results == []
    assert mon.first_nonfinite is None


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_history_is_a_usage_error_showing_the_value(bad: object) -> None:
    with pytest.raises(UsageError, match=f"history must be an int >= 0 or None, got {bad!r}"):
        Monitor(nn.Linear(2, 2), history=bad)  # type: ignore[arg-type]


def test_alerts_keep_the_last_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "ALERTS_KEPT", 3)
    middle = NaNOut()
    model = chain(middle)
    with Monitor(model, every=1) as mon, torch.no_grad():
        for step in range(8):
            middle.armed = step % 2 == 0  # a NaN that starts every other step
            model(torch.randn(2, 8))
            mon.step()
    assert len(mon.alerts) == 3
    assert [a.step for a in mon.alerts] == sorted(a.step for a in mon.alerts)
    assert mon.alerts[-1].step == 6


def test_hook_failures_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy, "ERRORS_KEPT", 4)
    model = nn.Linear(2, 2)

    def broken(_name: str, _module: nn.Module, _args: Any, _out: Any) -> None:
        raise RuntimeError("broken hook")

    with hookscope.session(model, on_error="warn") as s:
        s.add_forward_hook(broken)
        with pytest.warns(HookWarning, match="broken hook"):
            for _ in range(10):
                model(torch.ones(1, 2))
        assert len(s.errors) == 4
        assert s._runner.errors_dropped == 6


# -- the sentinel: exact NaN/Inf at any cadence ------------------------------------------


def _where(first: Any) -> tuple[Any, ...]:
    return (first.step, first.phase, first.module, first.tensor, first.rank)


def test_nan_between_recorded_steps_is_found_at_its_step() -> None:
    """The issue's case (NaN at step 2345, every=100) at a smaller scale: step 23, every=10."""
    runs = {}
    for every in (1, 10):
        torch.manual_seed(0)
        model = blocks(6)
        runs[every] = train(model, 40, nan_at=(23,), poisoned=model[1 + 3 * 3], every=every)
    (exact, _), (sparse, returned) = runs[1], runs[10]
    assert exact.first_nonfinite is not None
    assert _where(exact.first_nonfinite) == (23, "forward", "10", "output", 0)
    assert sparse.first_nonfinite == exact.first_nonfinite
    nonfinite = [
        (a.step, a.phase, a.module, a.tensor) for a in exact.alerts if a.rule == "nonfinite"
    ]
    assert [
        (a.step, a.phase, a.module, a.tensor) for a in sparse.alerts if a.rule == "nonfinite"
    ] == nonfinite
    # unrecorded finite steps give nothing; step 23 gives the counts of the non-finite tensors
    assert [i for i, r in enumerate(returned) if r is not None] == [0, 10, 20, 23, 30]
    found = returned[23]
    assert found is not None and found.sentinel and found.first_nonfinite == exact.first_nonfinite
    counts = {(r.phase, r.module, r.stat): r.value for r in found.records}
    assert counts[("forward", "10", "nan_count")] == 8.0  # the poisoned row: one per sample
    assert {r.stat for r in found.records} == {"nan_count", "inf_count"}
    assert all(r.value > 0 for r in found.records if r.stat == "nan_count" and r.module == "10")


def test_sentinel_step_goes_to_every_sink_at_once() -> None:
    sink = ListSink()
    model = blocks(3)
    train(model, 15, nan_at=(7,), poisoned=model[4], every=5, sinks=[sink])
    assert [(r.step, r.sentinel) for r in sink.written] == [
        (0, False), (5, False), (7, True), (10, False),
    ]  # fmt: skip
    assert sink.written[2].first_nonfinite is not None
    assert sink.written[2].first_nonfinite.step == 7
    assert sink.closed


def test_backward_nan_between_recorded_steps() -> None:
    firsts = {}
    for every in (1, 8):
        middle = NaNGrad()
        model = chain(middle)
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
        with Monitor(model, every=every) as mon:
            for step in range(12):
                x = torch.randn(4, 8)
                if step == 5:
                    model(x).pow(2).mean().backward()
                else:
                    model[3](model[1](model[0](x))).sum()  # forward without the NaN module
                opt.zero_grad()
                mon.step()
        firsts[every] = mon.first_nonfinite
    assert firsts[1] is not None and (firsts[1].step, firsts[1].phase) == (5, "backward")
    assert firsts[8] == firsts[1]


def test_nan_in_the_model_input_between_recorded_steps() -> None:
    firsts = {}
    for every in (1, 4):
        model = blocks(2)
        with Monitor(model, every=every) as mon, torch.no_grad():
            for step in range(7):
                x = torch.randn(3, 4)
                if step == 6:
                    x[1, 2] = math.inf
                model(x)
                mon.step()
        firsts[every] = mon.first_nonfinite
    assert firsts[1] is not None
    assert _where(firsts[1]) == (6, "forward", "0", "input[0]", 0)
    assert firsts[4] == firsts[1]


def test_nonfinite_alert_clears_and_fires_again_between_recorded_steps() -> None:
    alerts = {}
    for every in (1, 50):
        middle = NaNOut()
        model = chain(middle)
        with Monitor(model, every=every) as mon, torch.no_grad():
            for step in range(12):
                middle.armed = step in (3, 4, 9)
                model(torch.randn(2, 8))
                mon.step()
        alerts[every] = [(a.step, a.module, a.rule) for a in mon.alerts if a.rule == "nonfinite"]
    assert [step for step, module, _ in alerts[1] if module == "2"] == [3, 9]
    assert alerts[50] == alerts[1]


def test_unrecorded_steps_take_no_statistics_and_keep_nothing() -> None:
    sink = ListSink()
    model = blocks(2)
    mon, returned = train(model, 25, every=10, sinks=[sink])
    assert [r is None for r in returned].count(False) == 3  # steps 0, 10, 20
    assert [r.step for r in sink.written] == [0, 10, 20]
    assert sorted(mon.to_pandas().step.unique()) == [0, 10, 20]
    assert not mon.pending
