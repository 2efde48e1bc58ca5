"""The "Comparison" part of the HTML report: error vs depth, the culprit, the table.

Works on the JSON form of a `hookscope.compare.Comparison` (``to_dict()``,
what ``hookscope compare --format json`` prints), so a comparison saved as
``comparison.json`` in a run directory renders the same as a live one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hookscope._files import write_text
from hookscope.compare.format import render_html
from hookscope.errors import MissingExtraError, UsageError
from hookscope.viz import html as h
from hookscope.viz._mpl import new_figure, png_bytes

#: File name of a saved comparison inside a run directory.
COMPARISON = "comparison.json"
#: Errors of exactly 0 are drawn at this value on the log scale.
FLOOR = 1e-12


def _value(row: Mapping[str, Any], key: str) -> float:
    value = row.get(key, 0.0)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def error_depth_plot(comparisons: Sequence[Mapping[str, Any]]) -> Any:
    """Max abs error of every module call against its position in the run, log scale.

    One line per comparison (e.g. propagate and isolate of the same pair); the
    culprit of each is circled and ``atol`` drawn dashed.

    Raises:
        UsageError: no comparison has rows.
    """
    if not any(c.get("rows") for c in comparisons):
        raise UsageError("no compared modules to plot")
    longest = max(len(c.get("rows", [])) for c in comparisons)
    fig = new_figure(min(20.0, max(7.0, 0.06 * longest + 5.0)), 4.2)
    ax = fig.add_subplot(1, 1, 1)
    for cmp in comparisons:
        rows = cmp.get("rows", [])
        xs = [int(r.get("index", i)) for i, r in enumerate(rows)]
        ys = [max(_value(r, "max_abs"), FLOOR) for r in rows]
        (line,) = ax.plot(xs, ys, marker=".", linewidth=1, label=str(cmp.get("mode", "")))
        culprit = cmp.get("culprit")
        for x, y, row in zip(xs, ys, rows, strict=True):
            if row.get("module") == culprit:
                ax.plot([x], [y], "o", markersize=12, fillstyle="none", color=line.get_color())
                ax.annotate(
                    f"culprit: {culprit}", (x, y), xytext=(6, 6), textcoords="offset points"
                )
                break
    atol = _value(comparisons[0], "atol")
    if atol > 0:
        ax.axhline(atol, linestyle="--", color="grey", linewidth=1, label=f"atol {atol:g}")
    ax.set_yscale("log")
    ax.set_xlabel("module call, in execution order (deeper into the model to the right)")
    ax.set_ylabel("max abs error")
    ax.set_title("Error vs depth")
    ax.legend(loc="best", fontsize=8)
    return fig


def comparison_html(comparisons: Sequence[Mapping[str, Any]]) -> str:
    """HTML body of the Comparison section for one or more comparisons (JSON form)."""
    if not comparisons:
        return h.absent(f"no comparison ({COMPARISON} absent)")
    try:
        body = h.image(png_bytes(error_depth_plot(comparisons)), "error vs depth")
    except (UsageError, MissingExtraError) as exc:
        body = h.absent(f"error-vs-depth plot left out: {exc}")
    for cmp in comparisons:
        body += f"<h3>{h.esc(cmp.get('mode', ''))}</h3>{render_html(cmp)}"
    return body


def load_comparisons(run_dir: Path) -> list[dict[str, Any]]:
    """The comparisons saved in ``run_dir/comparison.json`` (an object or a list), or []."""
    path = run_dir / COMPARISON
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    items = data if isinstance(data, list) else [data]
    return [item for item in items if isinstance(item, dict)]


def write_comparison_report(
    comparisons: Sequence[Mapping[str, Any]], path: str | Path, *, title: str = "hookscope compare"
) -> Path:
    """Write a self-contained HTML page with the Comparison section (whole or not at all).

    Raises:
        UsageError: ``path`` cannot be written.
    """
    first = comparisons[0] if comparisons else {}
    subtitle = f"A: {first.get('a', '?')} — B: {first.get('b', '?')}"
    page = h.page(title, subtitle, [("comparison", "Comparison", comparison_html(comparisons))])
    return write_text(path, page, "the comparison report")
