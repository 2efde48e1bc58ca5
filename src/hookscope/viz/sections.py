"""The report's model-summary and doctor sections, as the tables the terminal shows.

``summary.json`` is read back into `SummaryData` and drawn with the same
cells and totals as ``hookscope summary``; ``doctor.json`` (from
``hookscope doctor --out`` or ``hookscope run --doctor``) as the doctor's hook
and call-site tables. A file that does not have that shape is shown as plain
key/value tables, with a note saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hookscope.doctor.render import bypasses_html, hooks_html
from hookscope.summary.format import render_html
from hookscope.summary.records import SummaryData
from hookscope.viz import html as h

_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)


def summary_section(data: Mapping[str, Any], notes: list[str]) -> str:
    """The summary table (tree names indented) and its totals."""
    try:
        return render_html(SummaryData.from_dict(dict(data)))
    except _MALFORMED as exc:
        notes.append(f"summary.json is not a hookscope summary ({type(exc).__name__}: {exc})")
        return h.mapping(data)


def doctor_section(data: Mapping[str, Any], notes: list[str]) -> str:
    """The doctor's verdict, hooks by module and direct ``.forward()`` calls by call site."""
    try:
        hooks = data.get("hooks")
        tables = "" if hooks is None else hooks_html(hooks)
        return _verdict(data) + tables + bypasses_html(data.get("bypasses", []))
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
