"""A step's results and a Monitor's state as HTML tables (what a notebook shows).

Works on plain data: a step as ``dataclasses.asdict(StepResult)`` (records,
alerts, first non-finite value and tensors as dicts), so nothing here
imports the records it draws. The tables have the report's columns
(`hookscope.viz.report`): per-layer statistics with one column per
statistic, alerts with step, module, tensor, value and rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hookscope import _html as h

#: Table titles per phase, in the order the tables are shown.
PHASES = (
    ("forward", "Activations (forward)"),
    ("backward", "Gradients w.r.t. module outputs (backward)"),
    ("param", "Parameter gradients"),
)
#: Alert columns, as in the report.
ALERT_COLUMNS = ("step", "module", "tensor", "value", "rule", "phase")
#: The columns before the statistics.
_FIXED = ("module", "tensor", "shape")
#: Alerts listed at most in a Monitor's table (the newest).
MAX_ALERTS = 50


def stat_rows(records: Iterable[Mapping[str, Any]], phase: str) -> list[dict[str, Any]]:
    """One row per ``(module, tensor)`` of ``phase``, a column per statistic, in record order."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        if record["phase"] != phase:
            continue
        key = (record["module"], record["tensor"])
        row = rows.setdefault(key, {"module": key[0] or "(root)", "tensor": key[1]})
        row[record["stat"]] = record["value"]
    return list(rows.values())


def _shapes(tensors: Sequence[Mapping[str, Any]], phase: str) -> dict[tuple[str, str], str]:
    return {
        (t["module"] or "(root)", t["tensor"]): f"{list(t['shape'])} {t['dtype']}"
        for t in tensors
        if t["phase"] == phase
    }


def nonfinite_html(first: Mapping[str, Any] | None) -> str:
    """Where the first NaN/Inf appeared, or a note that none did."""
    if not first:
        return '<p class="good">No NaN or Inf seen.</p>'
    where = f"{first.get('module') or '(root)'} ({first.get('phase')}, {first.get('tensor')})"
    return f'<p class="bad">First NaN/Inf at step {h.esc(first.get("step"))} in {h.esc(where)}</p>'


def alerts_html(alerts: Sequence[Mapping[str, Any]]) -> str:
    """The alerts table (the newest `MAX_ALERTS`), or a note that there are none."""
    if not alerts:
        return '<p class="good">No alerts.</p>'
    shown = list(alerts[-MAX_ALERTS:])
    more = f", the last {len(shown)} shown" if len(shown) < len(alerts) else ""
    return f"<h3>Alerts ({len(alerts)}{more})</h3>" + h.table(shown, ALERT_COLUMNS)


def step_html(step: Mapping[str, Any]) -> str:
    """A step: where it was taken, the first NaN/Inf, its alerts and a table per phase."""
    pairs: list[tuple[str, Any]] = [("step", step["step"]), ("records", len(step["records"]))]
    if step.get("world_size", 1) > 1:
        pairs.append(("rank", f"{step['rank']} of {step['world_size']} ({step['ranks']})"))
    if step.get("missing"):
        pairs.append(("missing", ", ".join(step["missing"])))
    parts = [h.key_values(pairs), nonfinite_html(step["first_nonfinite"])]
    return "".join([*parts, alerts_html(step["alerts"]), stat_tables_html(step)])


def stat_tables_html(step: Mapping[str, Any]) -> str:
    """One table per phase of a step's statistics: a row per tensor, a column per statistic."""
    parts = []
    for phase, title in PHASES:
        rows = stat_rows(step["records"], phase)
        if not rows:
            continue
        shapes = _shapes(step.get("tensors", ()), phase)
        for row in rows:
            row["shape"] = shapes.get((row["module"], row["tensor"]), "")
        stats = list(dict.fromkeys(k for row in rows for k in row if k not in _FIXED))
        parts.append(f"<h3>{h.esc(title)} ({len(rows)})</h3>")
        parts.append(h.table(rows, ["module", "tensor", "shape", *stats]))
    return "".join(parts)


def monitor_html(
    state: Sequence[tuple[str, Any]],
    last: Mapping[str, Any] | None,
    alerts: Sequence[Mapping[str, Any]],
    first: Mapping[str, Any] | None,
    no_step: str = "no step recorded yet: call mon.step() after each training step",
) -> str:
    """A Monitor: its state, every alert so far, the first NaN/Inf and its last recorded step.

    ``no_step`` is shown instead of the last step when there is none.
    """
    parts = [h.key_values(state), nonfinite_html(first), alerts_html(alerts)]
    if last is None:
        parts.append(h.absent(no_step))
    else:
        parts.append(f"<h3>Last recorded step: {h.esc(last['step'])}</h3>")
        parts.append(stat_tables_html(last))
    return "".join(parts)
