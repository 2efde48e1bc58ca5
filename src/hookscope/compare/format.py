"""Renderings of a comparison: table (culprit first), Markdown, JSON and HTML.

Pure string building: nothing here prints (the CLI does). `render_html` takes
the JSON form (``to_dict()``, what ``comparison.json`` holds), so the HTML
report of a run directory and a notebook show the same table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from hookscope import _html as h
from hookscope.compare.records import ComparisonData, Row
from hookscope.errors import UsageError

FORMATS = ("table", "json", "markdown")
_COLUMNS = ("#", "Module", "Type", "Max abs", "Max rel", "SQNR dB", "Cosine", "Outside", "")


def _num(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"


def _cells(row: Row) -> list[str]:
    missing = [t for t in row.tensors if t.metrics is None]
    flag = "EXCEEDS" if row.exceeds else ""
    if missing:
        flag = (flag + " " if flag else "") + missing[0].note
    return [
        str(row.index),
        row.label + (f" (B: {row.name_b})" if row.name_b else ""),
        row.type,
        _num(row.max_abs),
        _num(row.max_rel),
        _num(row.sqnr_db),
        f"{row.cosine:.6f}",
        f"{row.frac_outside:.2%}",
        flag,
    ]


def _header(cmp: ComparisonData) -> list[str]:
    culprit = cmp.culprit
    what = "introduces" if cmp.mode == "isolate" else "first shows"
    lines = [
        f"A: {cmp.label_a}",
        f"B: {cmp.label_b}",
        f"mode: {cmp.mode}; rtol={cmp.rtol:g} atol={cmp.atol:g}; {len(cmp.rows)} module call(s), "
        f"{len(cmp.exceeded)} outside the tolerance",
    ]
    if culprit is None:
        lines.append("culprit: none, every module is within the tolerance")
    else:
        lines.append(
            f"culprit: {culprit.label} ({culprit.type}) {what} the difference: "
            f"max abs {_num(culprit.max_abs)}, SQNR {_num(culprit.sqnr_db)} dB"
        )
    for side, names in (("A", cmp.unmatched_a), ("B", cmp.unmatched_b)):
        if names:
            shown = ", ".join(names[:8]) + (
                f", ... ({len(names)} in all)" if len(names) > 8 else ""
            )
            lines.append(f"unmatched in {side}: {shown}")
    return lines


def _ordered(cmp: ComparisonData) -> list[Row]:
    culprit = cmp.culprit
    rest = [row for row in cmp.rows if row is not culprit]
    return rest if culprit is None else [culprit, *rest]


def _table(cmp: ComparisonData) -> str:
    body = [_cells(row) for row in _ordered(cmp)]
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(_COLUMNS)]
    right = {0, 3, 4, 5, 6, 7}

    def line(cells: list[str] | tuple[str, ...]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    out = [*_header(cmp), "", line(_COLUMNS), line(["-" * w for w in widths])]
    out += [line(cells) for cells in body]
    return "\n".join(out)


def _markdown(cmp: ComparisonData) -> str:
    head = [f"- {text}" for text in _header(cmp)]
    rows = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    rows += [
        "| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |" for r in _ordered(cmp)
    ]
    return "\n".join([*head, "", *rows])


def _finite(value: Any) -> Any:
    """JSON has no inf/nan: write them as the strings ``"inf"``, ``"-inf"``, ``"nan"``."""
    if isinstance(value, float) and not math.isfinite(value):
        return _num(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def render(cmp: ComparisonData, fmt: str) -> str:
    """``cmp`` as ``"table"``, ``"markdown"`` or ``"json"``."""
    if fmt == "table":
        return _table(cmp)
    if fmt == "markdown":
        return _markdown(cmp)
    if fmt == "json":
        return json.dumps(_finite(cmp.to_dict()), indent=2, allow_nan=False)
    raise UsageError(f"format must be one of {FORMATS}, got {fmt!r}")


#: Columns of the HTML table (keys of ``Row.to_dict()``).
HTML_COLUMNS: tuple[str, ...] = ("index", "module", "type", "max_abs", "max_rel", "sqnr_db")
HTML_COLUMNS += ("cosine", "frac_outside")


def render_html(cmp: Mapping[str, Any]) -> str:
    """Sides, tolerances, the verdict and the rows (culprit first) of a JSON comparison."""
    culprit = cmp.get("culprit")
    verdict = (
        f'<p class="bad">culprit: <code>{h.esc(culprit)}</code> '
        f"({h.esc(cmp.get('exceeded', 0))} module call(s) outside the tolerance)</p>"
        if culprit
        else '<p class="good">Every module is within the tolerance.</p>'
    )
    rows = list(cmp.get("rows", []))
    first = [r for r in rows if r.get("module") == culprit]
    ordered = first + [r for r in rows if r.get("module") != culprit]
    pairs = [(k, cmp.get(k)) for k in ("a", "b", "mode", "rtol", "atol")]
    pairs += [
        (f"unmatched in {s}", ", ".join(cmp.get(f"unmatched_{s.lower()}", [])) or "none")
        for s in "AB"
    ]
    return h.key_values(pairs) + verdict + h.table(ordered, HTML_COLUMNS)
