"""Renderings of a summary's data: table, Markdown, CSV, JSON and HTML.

Pure string building: nothing here prints (the CLI does). The HTML is the
same table and totals in the report (`hookscope.viz.sections`) and in a
notebook (``ModelSummary._repr_html_``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import get_args

from hookscope import _html as h
from hookscope.errors import UsageError
from hookscope.summary.records import Shapes, SummaryData, SummaryFormat, SummaryRow

COLUMNS: tuple[str, ...] = ("Layer", "Type", "Input shape", "Output shape", "Own params")
COLUMNS += ("Params", "Train", "MACs", "Out mem")
RIGHT = {"Own params", "Params", "MACs", "Out mem"}


def human_count(value: int) -> str:
    """``4089184256`` → ``"4.09 G"``; below 1000 the plain integer."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return str(value)


def human_bytes(value: int) -> str:
    """``1536`` → ``"1.50 KiB"``."""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def format_shapes(shapes: Shapes, limit: int = 2) -> str:
    """``((1, 3), (2,))`` → ``"[1, 3] [2]"``; more than ``limit`` shapes abbreviated."""
    text = " ".join(str(list(s)) for s in shapes[:limit])
    if len(shapes) > limit:
        text += f" +{len(shapes) - limit} more"
    return text


def row_labels(rows: Sequence[SummaryRow]) -> list[str]:
    """Each row's name relative to the row it was called from, for the tree column.

    ``transformer.h.0`` called from ``transformer`` (through a ``ModuleList``
    that is never called itself) reads ``h.0``, so it keeps its parent.
    """
    labels = []
    stack: list[SummaryRow] = []
    for row in rows:
        while stack and stack[-1].depth >= row.depth:
            stack.pop()
        parent = stack[-1].name if stack else None
        if not row.name:
            labels.append("(root)")
        elif parent and row.name.startswith(parent + "."):
            labels.append(row.name[len(parent) + 1 :])
        elif parent == "":
            labels.append(row.name)
        else:
            labels.append(row.name.rsplit(".", 1)[-1])
        stack.append(row)
    return labels


def table_cells(s: SummaryData) -> list[tuple[str, ...]]:
    """The table's cells, one tuple per row (columns as in `COLUMNS`)."""
    return [_cells(row, label) for row, label in zip(s.rows, row_labels(s.rows), strict=True)]


def _cells(row: SummaryRow, label: str) -> tuple[str, ...]:
    repeat = row.call > 1
    return (
        "  " * row.depth + label,
        row.type,
        format_shapes(row.input_shapes),
        format_shapes(row.output_shapes),
        "(shared)" if repeat and row.own_params else f"{row.own_params:,}",
        "(shared)" if repeat and row.params else f"{row.params:,}",
        row.trainable,
        human_count(row.macs) if row.macs else "-",
        human_bytes(row.output_bytes),
    )


def _listed(names: Sequence[str]) -> str:
    more = f", +{len(names) - 5} more" if len(names) > 5 else ""
    return ", ".join(names[:5]) + more


def totals_lines(s: SummaryData) -> list[str]:
    """The totals under the table, one fact per line."""
    dtypes = ", ".join(
        f"{name} {count:,} ({human_bytes(s.param_bytes_by_dtype[name])})"
        for name, count in s.params_by_dtype.items()
    )
    run_on = s.device + (f" (meta run failed: {s.fallback_reason})" if s.fallback_reason else "")
    lines = [
        f"Total params: {s.total_params:,} ({human_bytes(s.param_bytes)})",
        f"Trainable params: {s.trainable_params:,}",
        f"Frozen params: {s.frozen_params:,}",
        f"Params by dtype: {dtypes or 'none'}",
        f"Buffers: {s.buffers:,} ({human_bytes(s.buffer_bytes)})",
        f"MACs: {human_count(s.macs)} ({s.macs:,})",
        f"FLOPs (2 x MACs): {human_count(s.flops)}",
        f"Forward activation memory (leaf outputs): {human_bytes(s.activation_bytes)}",
        f"Input shape: {format_shapes(s.input_shapes, 8)}",
        f"Output shape: {format_shapes(s.output_shapes, 8)}",
        f"Run on: {run_on}",
    ]
    excluded = sum(op.calls for op in s.uncounted_ops if op.category == "convention")
    lines.append(
        f"Not in MACs by convention (elementwise, norm, pooling, softmax): {excluded} op calls"
    )
    if s.not_run:
        names = _listed(s.not_run)
        lines.append(f"Modules that never ran ({len(s.not_run)}): {names}")
    if s.called_directly:
        lines.append(
            f"Modules run through a direct .forward() call, their hooks skipped "
            f"({len(s.called_directly)}): {_listed(s.called_directly)} (see hookscope doctor)"
        )
    if s.unknown_ops:
        listed = ", ".join(f"{op.op} x{op.calls}" for op in s.unknown_ops)
        lines.append(f"Not counted, no MAC formula: {listed}")
    return lines


def render_table(s: SummaryData) -> str:
    """Aligned plain-text table followed by the totals."""
    body = table_cells(s)
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(COLUMNS)]

    def line(cells: tuple[str, ...]) -> str:
        parts = [
            cell.rjust(width) if column in RIGHT else cell.ljust(width)
            for cell, width, column in zip(cells, widths, COLUMNS, strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = "=" * len(line(tuple("x" * w for w in widths)))
    out = [rule, line(COLUMNS), rule, *(line(cells) for cells in body), rule]
    out.extend(totals_lines(s))
    out.append(rule)
    return "\n".join(out)


def render_markdown(s: SummaryData) -> str:
    """A pipe table (names in code spans) and the totals as a list."""
    align = ["---:" if c in RIGHT else "---" for c in COLUMNS]
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(align) + "|"]
    for row, row_cells in zip(s.rows, table_cells(s), strict=True):
        cells = list(row_cells)
        cells[0] = "&nbsp;" * 2 * row.depth + f"`{row.name or '(root)'}`"
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    out.extend(f"- {text}" for text in totals_lines(s))
    return "\n".join(out)


def render_csv(s: SummaryData) -> str:
    """One line per row, raw numbers, shapes as ``1x3x32x32;1x10``."""
    buffer = io.StringIO()
    fields = ["index", "name", "type", "depth", "call", "input_shapes", "output_shapes"]
    fields += ["own_params", "params", "trainable", "macs", "own_macs", "output_bytes", "leaf"]
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(fields)
    for row in s.rows:
        data = row.to_dict()
        for key in ("input_shapes", "output_shapes"):
            data[key] = ";".join("x".join(str(n) for n in shape) for shape in data[key])
        writer.writerow([data[f] for f in fields])
    return buffer.getvalue()


def render(s: SummaryData, fmt: SummaryFormat) -> str:
    """Dispatch on ``fmt``; raises `UsageError` for an unknown one."""
    if fmt not in get_args(SummaryFormat):
        raise UsageError(f"format must be one of {get_args(SummaryFormat)}, got {fmt!r}")
    if fmt == "json":
        return s.to_json()
    if fmt == "csv":
        return render_csv(s)
    if fmt == "markdown":
        return render_markdown(s)
    return render_table(s)


def render_html(s: SummaryData) -> str:
    """The table (tree names indented) and the totals as an HTML fragment."""
    rows = [
        "<tr>"
        + "".join(_html_cell(column, cell) for column, cell in zip(COLUMNS, row, strict=True))
        + "</tr>"
        for row in table_cells(s)
    ]
    head = "".join(f"<th>{h.esc(column)}</th>" for column in COLUMNS)
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    facts = "".join(f"<li>{h.esc(line)}</li>" for line in totals_lines(s))
    return f"{table}<ul>{facts}</ul>"


def _html_cell(column: str, text: str) -> str:
    if column == "Layer":  # keep the tree's indentation
        return f'<td style="white-space: pre">{h.esc(text)}</td>'
    return f'<td class="num">{h.esc(text)}</td>' if column in RIGHT else f"<td>{h.esc(text)}</td>"
