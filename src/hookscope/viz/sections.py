"""The report's model-summary and doctor sections, as the tables the terminal shows.

``summary.json`` is read back into a `ModelSummary` and drawn with the same
cells and totals as ``hookscope summary``; ``doctor.json`` (from
``hookscope doctor --out`` or ``hookscope run --doctor``) as the doctor's hook
and call-site tables. A file that does not have that shape is shown as plain
key/value tables, with a note saying why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hookscope.doctor.render import STATUS, short_path
from hookscope.summary.format import COLUMNS, RIGHT, table_cells, totals_lines
from hookscope.summary.records import ModelSummary
from hookscope.viz import html as h

_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)


def summary_section(data: Mapping[str, Any], notes: list[str]) -> str:
    """The summary table (tree names indented) and its totals."""
    try:
        summary = ModelSummary.from_dict(dict(data))
        cells = table_cells(summary)
        totals = totals_lines(summary)
    except _MALFORMED as exc:
        notes.append(f"summary.json is not a hookscope summary ({type(exc).__name__}: {exc})")
        return h.mapping(data)
    rows = [
        "<tr>"
        + "".join(_cell(column, cell) for column, cell in zip(COLUMNS, row, strict=True))
        + "</tr>"
        for row in cells
    ]
    head = "".join(f"<th>{h.esc(column)}</th>" for column in COLUMNS)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    facts = "".join(f"<li>{h.esc(line)}</li>" for line in totals)
    return f"{table}<ul>{facts}</ul>"


def _cell(column: str, text: str) -> str:
    if column == "Layer":  # keep the tree's indentation
        return f'<td style="white-space: pre">{h.esc(text)}</td>'
    return f'<td class="num">{h.esc(text)}</td>' if column in RIGHT else f"<td>{h.esc(text)}</td>"


def doctor_section(data: Mapping[str, Any], notes: list[str]) -> str:
    """The doctor's verdict, hooks by module and direct ``.forward()`` calls by call site."""
    try:
        return _verdict(data) + _hooks(data.get("hooks")) + _bypasses(data.get("bypasses", []))
    except _MALFORMED as exc:
        notes.append(f"doctor.json is not a hookscope doctor report ({type(exc).__name__}: {exc})")
        return h.mapping(data)


def _verdict(data: Mapping[str, Any]) -> str:
    bypasses = data.get("bypasses", [])
    parts = []
    if "model" in data:
        ran = f"{data.get('modules_executed', '?')}/{data.get('modules_total', '?')} modules ran"
        mode = "forward + backward" if data.get("backward") else "forward only"
        parts.append(f"<p>{h.esc(data['model'])} ({mode}; {h.esc(ran)})</p>")
    if "script" in data:
        script = f"{data['script']} (exit code {data.get('exit_code', '?')})"
        parts.append(f"<p>hookscope run --doctor {h.esc(script)}</p>")
    if bypasses:
        parts.append(
            f'<p class="bad">{len(bypasses)} module(s) ran without their hooks: '
            "their <code>forward</code> was called directly. Call the module instead: "
            "<code>module(x)</code>, not <code>module.forward(x)</code>.</p>"
        )
    else:
        parts.append('<p class="good">No hook bypasses found.</p>')
    return "".join(parts)


def _hooks(hooks: Sequence[Mapping[str, Any]] | None) -> str:
    if hooks is None:
        return ""
    if not hooks:
        return "<h3>Hooks (by module)</h3>" + h.absent("no hooks on this model")
    rows = [
        {
            "module": hook.get("module") or "(root)",
            "kind": hook.get("kind"),
            "hook": hook.get("hook"),
            "fired": hook.get("fired"),
            "status": STATUS.get(hook.get("code"), "NOT FIRED"),
            "why / fix": " — ".join(str(x) for x in (hook.get("reason"), hook.get("fix")) if x),
        }
        for hook in hooks
    ]
    return f"<h3>Hooks by module ({len(rows)})</h3>" + h.table(rows)


def _bypasses(bypasses: Sequence[Mapping[str, Any]]) -> str:
    if not bypasses:
        return ""
    rows = [
        {
            "call site": short_path(str(record.get("call_site", "?"))),
            "module": record.get("module") or "(root)",
            "type": record.get("module_type") or record.get("type"),
            "count": record.get("count"),
            "hooks skipped": ", ".join(record.get("hooks_skipped") or []) or "(none yet)",
            "fix": record.get("fix", ""),
        }
        for record in bypasses
    ]
    return f"<h3>Direct .forward() calls by call site ({len(rows)})</h3>" + h.table(rows)
