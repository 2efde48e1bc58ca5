"""What a notebook shows: ``_repr_html_`` and ``__repr__`` of summary, doctor, compare and Monitor.

The HTML is parsed (``html.parser``) and its tables checked against the
result objects; module and class names that look like markup must come out
as text, never as tags.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

import hookscope
from hookscope._html import fmt
from hookscope.summary.format import COLUMNS, human_count, totals_lines
from tests.doctor.models import PrunedParent
from tests.htmlpage import ALLOWED, Page
from tests.monitor.models import NaNOut, chain

HOSTILE = "<script>alert(1)</script>"
HOSTILE_CLASS = "<img src=x onerror=alert(2)>"


def hostile_model() -> nn.Module:
    """Linear, a ReLU registered under a markup name, Linear; the root's class name is markup."""
    cls = type(HOSTILE_CLASS, (nn.Sequential,), {})
    model = cls()
    model.add_module("fc1", nn.Linear(4, 8))
    model.add_module(HOSTILE, nn.ReLU())
    model.add_module("fc2", nn.Linear(8, 3))
    return model


def test_summary_html_is_the_table_and_totals() -> None:
    model, x = hostile_model(), torch.randn(2, 4)
    s = hookscope.summary(model, x)
    page = Page(s._repr_html_())
    assert page.tags <= ALLOWED
    table = page.table_with("Layer")
    assert table[0] == list(COLUMNS)
    assert len(table) == 1 + len(s.rows)
    for cells, row in zip(table[1:], s.rows, strict=True):
        assert cells[0].strip() == (row.name or "(root)")
        assert cells[1] == row.type
        assert cells[5] == f"{row.params:,}"
        assert cells[7] == (human_count(row.macs) if row.macs else "-")
    assert table[2][0].strip() == "fc1" and table[3][0].strip() == HOSTILE
    assert table[1][1] == HOSTILE_CLASS
    text = page.all_text
    for line in totals_lines(s):
        assert line in text
    assert f"Total params: {4 * 8 + 8 + 8 * 3 + 3:,}" in text
    assert repr(s) == f"<ModelSummary {HOSTILE_CLASS}: 4 rows, 67 params (268 B), 112 MACs on meta>"


def test_doctor_html_lists_hooks_and_bypasses() -> None:
    model = PrunedParent()
    model.add_module(HOSTILE, nn.Identity())
    hits: list[int] = []
    model.fc.register_forward_hook(lambda *_: hits.append(1))
    getattr(model, HOSTILE).register_forward_hook(lambda *_: hits.append(2))
    report = hookscope.doctor(model, torch.randn(2, 4))
    page = Page(report._repr_html_())
    assert page.tags <= ALLOWED
    hooks = page.table_with("status")
    assert hooks[0] == ["module", "kind", "hook", "fired", "status", "why / fix"]
    by_module = {row[0]: row for row in hooks[1:]}
    assert set(by_module) == {"fc", HOSTILE}
    assert by_module["fc"][3] == "0" and by_module["fc"][4].startswith("SKIPPED")
    assert by_module[HOSTILE][4] == "NOT FIRED: module never ran"
    calls = page.table_with("call site")
    assert [row[1:4] for row in calls[1:]] == [["fc", "Linear", "1"]]
    assert calls[1][0].startswith("tests/doctor/models.py:")
    assert "PROBLEMS: 2 of 2 hook(s)" in page.all_text
    assert repr(report) == (
        "<DoctorReport PrunedParent: 2 hook(s), 2 problem(s), 1 direct .forward() call site(s)>"
    )


def test_comparison_html_puts_the_culprit_first() -> None:
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    b = copy.deepcopy(a)
    with torch.no_grad():
        b[2].weight.add_(0.5)
    cmp = hookscope.compare(a, b, torch.randn(3, 4))
    assert cmp.culprit is not None and cmp.culprit.name == "2"
    page = Page(cmp._repr_html_())
    assert page.tags <= ALLOWED
    table = page.table_with("sqnr_db")
    assert table[0] == ["index", "module", "type", "max_abs", "max_rel", "sqnr_db", "cosine"] + [
        "frac_outside"
    ]
    assert table[1][1] == "2"
    by_module = {row[1]: row for row in table[1:]}
    assert set(by_module) == {r.label for r in cmp.rows}
    for r in cmp.rows:
        assert by_module[r.label][3] == fmt(r.max_abs)
        assert by_module[r.label][5] == fmt(r.sqnr_db)
    assert by_module["0"][3] == "0"
    assert "culprit: 2" in page.all_text
    assert repr(cmp).startswith("<Comparison propagate Sequential vs Sequential: 6 module call(s)")
    assert repr(cmp).endswith("culprit 2>")


def test_step_result_html_has_one_row_per_tensor_and_stat_columns() -> None:
    model, x = hostile_model(), torch.randn(2, 4)
    with hookscope.Monitor(model) as mon:
        model(x).sum().backward()
        result = mon.step()
    assert result is not None
    page = Page(result._repr_html_())
    assert page.tags <= ALLOWED
    forward = page.table_with("mean")
    assert forward[0][:3] == ["module", "tensor", "shape"]
    rows = {row[0]: dict(zip(forward[0], row, strict=True)) for row in forward[1:]}
    assert list(rows) == ["fc1", HOSTILE, "fc2"]
    assert rows["fc1"]["shape"] == "[2, 8] float32"
    values = {(r.module, r.stat): r.value for r in result.records if r.phase == "forward"}
    for (module, stat), value in values.items():
        assert rows[module][stat] == fmt(value)
    params = page.table_with("norm")  # backward and param tables both have norm; first is backward
    assert params[0][:3] == ["module", "tensor", "shape"]
    text = page.all_text
    assert "Parameter gradients (4)" in text and "No NaN or Inf seen." in text
    assert repr(result) == (
        f"<StepResult step 0: {len(result.records)} records of {len(result.tensors)} tensors, "
        "0 alert(s), no NaN/Inf>"
    )


def test_monitor_html_shows_state_alerts_and_the_last_step() -> None:
    middle = NaNOut()
    model = chain(middle)
    mon = hookscope.Monitor(model)
    assert "not opened" in Page(mon._repr_html_()).all_text
    with mon:
        assert "no step recorded yet" in Page(mon._repr_html_()).all_text
        for step in range(3):
            middle.armed = step == 2
            model(torch.randn(2, 8)).sum().backward()
            mon.step()
        page = Page(mon._repr_html_())
    assert page.tags <= ALLOWED
    state = {row[0]: row[1] for row in page.tables[0]}
    assert state["state"] == "open" and state["steps kept"] == "3" and state["next step"] == "3"
    first = mon.first_nonfinite
    assert first is not None and first.module == "2"
    assert "First NaN/Inf at step 2 in 2 (forward, output)" in page.all_text
    alerts = page.table_with("rule")
    assert len(alerts) - 1 == len(mon.alerts) > 0
    assert {row[4] for row in alerts[1:]} == {a.rule for a in mon.alerts}
    last = page.table_with("mean")
    assert [row[0] for row in last[1:]] == ["0", "1", "2", "3", "4", "5"]
    assert "Last recorded step: 2" in page.all_text
    assert repr(mon).startswith("<Monitor Sequential: closed, 3 step(s) kept, ")


def test_a_model_without_hooks_or_children_renders() -> None:
    model = nn.Identity()
    summary = hookscope.summary(model, torch.ones(1))
    assert Page(summary._repr_html_()).table_with("Layer")[1][1] == "Identity"
    report = hookscope.doctor(model, torch.ones(1))
    assert "no hooks on this model" in Page(report._repr_html_()).all_text


def test_monitor_without_kept_steps_says_so() -> None:
    model = chain(NaNOut())
    with hookscope.Monitor(model, keep=False) as mon:
        model(torch.randn(2, 8)).sum().backward()
        mon.step()
        text = Page(mon._repr_html_()).all_text
    assert "keep=False: no step kept" in text and "No alerts." in text
