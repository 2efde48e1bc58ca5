"""Several writers of one run: torch.distributed ranks, or processes sharing one ``--out``.

A run store holds one writer's files per process (`hookscope.store.layout`):
``main`` (a single process), ``rank<N>`` (rank N of a torch.distributed run),
``pid<PID>`` (a second process that found the store locked); legacy runs
have ``monitor.jsonl`` / ``monitor.rank<N>.jsonl`` / ``monitor.pid<PID>.jsonl``.
`compare` lines up their values at the last step
every writer recorded: per-writer values side by side, the spread (max - min)
and the writers that diverge; `first_divergence` finds, for each writer, the
first step where it diverged (e.g. one rank's activations blowing up first).
Pure data, no plotting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from hookscope.viz.records import Row

#: A writer diverges when its magnitude is this many times the median of the others'.
DIVERGE_FACTOR = 10.0
_MAGNITUDES = frozenset({"absmax", "rms", "norm", "std"})
_COUNTS = frozenset({"nan_count", "inf_count"})


@dataclass(frozen=True)
class Writer:
    """The monitor file of one writer and what it held.

    Attributes:
        label: ``"rank0"``, ``"pid4242"``, or ``"main"`` for a single process.
        path: the store folder (or legacy JSONL file).
        rows: its records, each with its ``step`` (downsampled in a long run,
            see `hookscope.viz.digest`).
        steps: the number of steps recorded.
    """

    label: str
    path: Path
    rows: tuple[Row, ...]
    steps: int


@dataclass(frozen=True)
class Spread:
    """One statistic of one tensor across writers.

    Attributes:
        key: ``(phase, module, tensor, stat)``.
        values: one value per writer (NaN where a writer lacks it), in writer order.
        spread: max - min over the finite values.
        diverging: labels of the writers that diverge (see `DIVERGE_FACTOR`).
    """

    key: tuple[str, str, str, str]
    values: tuple[float, ...]
    spread: float
    diverging: tuple[str, ...]


def _by_key(rows: tuple[Row, ...], step: int) -> dict[tuple[str, str, str, str], float]:
    return {
        (row["phase"], row["module"], row["tensor"], row["stat"]): row["value"]
        for row in rows
        if row["step"] == step
    }


def _diverging(labels: list[str], values: list[float], stat: str) -> tuple[str, ...]:
    """Writers whose value is non-finite (or counts NaN/Inf) while another's is not, or
    whose magnitude (``absmax``, ``rms``, ``norm``, ``std``) is `DIVERGE_FACTOR` times the others'."""
    out = []
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        others = [v for i, v in enumerate(values) if i != index and math.isfinite(v)]
        if not others:
            continue
        center = median(others)
        nonfinite = not math.isfinite(value) or (stat in _COUNTS and value > 0 and center == 0)
        blown_up = stat in _MAGNITUDES and abs(value) > DIVERGE_FACTOR * abs(center) > 0
        if nonfinite or blown_up:
            out.append(label)
    return tuple(out)


def compare(writers: tuple[Writer, ...]) -> tuple[int | None, list[Spread]]:
    """Values of every writer at the last step all of them recorded (None when there is none)."""
    steps = [{row["step"] for row in w.rows} for w in writers]
    common = set.intersection(*steps) if steps else set()
    if not common:
        return None, []
    step = max(common)
    tables = [_by_key(w.rows, step) for w in writers]
    labels = [w.label for w in writers]
    spreads = []
    for key in tables[0]:
        values = [table.get(key, math.nan) for table in tables]
        finite = [v for v in values if math.isfinite(v)]
        spread = max(finite) - min(finite) if finite else math.nan
        spreads.append(Spread(key, tuple(values), spread, _diverging(labels, values, key[3])))
    return step, spreads


def first_divergence(
    writers: tuple[Writer, ...],
) -> dict[str, tuple[int, tuple[str, str, str, str]]]:
    """For each writer that ever diverges: the first step and the first statistic where it did."""
    labels = [w.label for w in writers]
    steps = sorted(set.intersection(*({row["step"] for row in w.rows} for w in writers)))
    found: dict[str, tuple[int, tuple[str, str, str, str]]] = {}
    for step in steps:
        tables = [_by_key(w.rows, step) for w in writers]
        for key in tables[0]:
            values = [table.get(key, math.nan) for table in tables]
            for label in _diverging(labels, values, key[3]):
                found.setdefault(label, (step, key))
        if len(found) == len(writers):
            break
    return found
