"""HTML fragments: escaped text, tables, key/value lists.

The building blocks of the HTML report (`hookscope.viz.html` adds the page
around them) and of the ``_repr_html_`` of results shown in a notebook. Every
piece of text goes through ``html.escape``, so a module called
``<script>`` shows as text. Nothing here imports the rest of hookscope.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_TABLE_ROWS = 300


def esc(value: object) -> str:
    """``str(value)`` escaped for HTML text and attributes."""
    return html.escape(str(value), quote=True)


def fmt(value: Any) -> str:
    """A table cell's text: ints with separators, floats with 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"  # counts read back from JSON as floats
        return f"{value:.4g}"
    if isinstance(value, (list, tuple, dict)):
        text = json.dumps(value, default=str)
        return text if len(text) <= 120 else text[:117] + "..."
    return str(value)


def _cell(value: Any) -> str:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    return f'<td class="num">{esc(fmt(value))}</td>' if numeric else f"<td>{esc(fmt(value))}</td>"


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """An HTML table of dict rows (columns: the union of keys, first-seen order)."""
    if not rows:
        return absent("none")
    cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(_cell(row.get(c)) for c in cols) + "</tr>" for row in rows[:MAX_TABLE_ROWS]
    )
    more = len(rows) - MAX_TABLE_ROWS
    tail = f"<p class='absent'>{more} more row(s) not shown</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{tail}"


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of ``(key, value)`` pairs."""
    body = "".join(f"<tr><th>{esc(k)}</th>{_cell(v)}</tr>" for k, v in pairs)
    return f"<table><tbody>{body}</tbody></table>" if body else absent("none")


def absent(text: str) -> str:
    """A greyed-out note (for parts a run did not produce)."""
    return f'<p class="absent">{esc(text)}</p>'
