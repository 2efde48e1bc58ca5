"""The report's "Ranks" section: every writer's values side by side (see `hookscope.viz.ranks`)."""

from __future__ import annotations

from typing import Any

from hookscope.viz import html as h
from hookscope.viz.ranks import Writer, compare, first_divergence

#: Rows shown in the side-by-side table: diverging ones first, then by spread.
MAX_ROWS = 60


def ranks_section(writers: tuple[Writer, ...]) -> str:
    """HTML: which writers there are, who diverged first, and the last common step side by side."""
    if len(writers) < 2:
        return h.absent("one writer (a single process or rank): nothing to compare")
    labels = [w.label for w in writers]
    files = ", ".join(f"{w.label}: {w.path.name} ({w.steps} step(s))" for w in writers)
    body = f"<p>{len(writers)} writers — {h.esc(files)}</p>"
    diverged = first_divergence(writers)
    if diverged:
        rows = [
            {"writer": label, "step": step, "phase": key[0], "module": key[1],
             "tensor": key[2], "stat": key[3]}
            for label, (step, key) in sorted(diverged.items(), key=lambda item: item[1][0])
        ]  # fmt: skip
        body += '<p class="bad">Diverging writers, first step where each diverged:</p>'
        body += h.table(rows, ["writer", "step", "phase", "module", "tensor", "stat"])
    else:
        body += '<p class="good">No writer diverges from the others.</p>'
    step, spreads = compare(writers)
    if step is None:
        return body + h.absent("the writers recorded no step in common")
    spreads.sort(key=lambda s: (not s.diverging, -(s.spread if s.spread == s.spread else 1e308)))
    table: list[dict[str, Any]] = []
    for spread in spreads[:MAX_ROWS]:
        phase, module, tensor, stat = spread.key
        row: dict[str, Any] = {"phase": phase, "module": module, "tensor": tensor, "stat": stat}
        row.update(zip(labels, spread.values, strict=True))
        row.update(spread=spread.spread, diverging=", ".join(spread.diverging))
        table.append(row)
    columns = ["phase", "module", "tensor", "stat", *labels, "spread", "diverging"]
    shown = f"{min(len(spreads), MAX_ROWS)} of {len(spreads)}"
    return (
        body
        + f"<h3>Step {step}, the last every writer recorded ({shown} statistics)</h3>"
        + h.table(table, columns)
    )
