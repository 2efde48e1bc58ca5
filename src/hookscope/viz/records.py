"""Monitor records as plain rows, and the per-layer aggregates the plots draw.

A row is the Monitor's tidy record: ``{"step", "phase", "module", "tensor",
"stat", "value"}`` with phase ``forward`` | ``backward`` | ``param``. Rows
come from a live `hookscope.Monitor`, its ``to_pandas()`` frame, or a
``monitor.jsonl`` file (see `hookscope.viz.rundir`). Pure data: no plotting.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hookscope.errors import UsageError

Row = dict[str, Any]

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "+inf": math.inf}


def to_float(value: Any) -> float:
    """A record value as a float; JSONL writes non-finite values as ``"nan"``/``"inf"``."""
    if isinstance(value, str):
        try:
            return _NONFINITE[value.strip().lower()]
        except KeyError:
            return float(value)
    return float(value)


def as_rows(source: Any) -> list[Row]:
    """Rows from a `Monitor`, a pandas frame of its records, or an iterable of dicts.

    Raises:
        UsageError: ``source`` is none of these, or rows lack the record columns.
    """
    if hasattr(source, "to_pandas"):
        source = source.to_pandas()
    if hasattr(source, "to_dict") and hasattr(source, "columns"):
        source = source.to_dict("records")
    if isinstance(source, (str, bytes, Mapping)) or not isinstance(source, Iterable):
        raise UsageError(
            "expected a Monitor, a DataFrame of its records or a list of record dicts, "
            f"got {type(source).__name__}"
        )
    rows: list[Row] = []
    for record in source:
        try:
            row = {
                "step": int(record["step"]),
                "phase": str(record["phase"]),
                "module": str(record["module"]),
                "tensor": str(record.get("tensor", "")),
                "stat": str(record["stat"]),
                "value": to_float(record["value"]),
            }
            if "hi" in record:  # a downsampled row keeps its bin's envelope
                row["lo"], row["hi"] = to_float(record["lo"]), to_float(record["hi"])
            rows.append(row)
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"not a monitor record ({exc!s}): {record!r}") from None
    return rows


def module_order(rows: Iterable[Row]) -> list[str]:
    """Module names in order of first appearance (the order the model ran them)."""
    return list(dict.fromkeys(row["module"] for row in rows))


@dataclass(frozen=True)
class LayerGradient:
    """Gradient norm of one layer over the recorded steps.

    Attributes:
        module: qualified module name.
        mean: mean over steps of the layer's gradient norm.
        max: largest gradient norm over steps.
        steps: number of steps with a finite value.
    """

    module: str
    mean: float
    max: float
    steps: int


def gradient_phase(rows: Iterable[Row]) -> str | None:
    """``"param"`` when parameter-gradient norms were recorded, else ``"backward"``, else None."""
    phases = {row["phase"] for row in rows if row["stat"] == "norm"}
    for phase in ("param", "backward"):
        if phase in phases:
            return phase
    return None


def gradient_flow(rows: Iterable[Row], *, phase: str | None = None) -> list[LayerGradient]:
    """Per-layer mean and max gradient norm, in the order the forward ran the layers.

    Uses rows with ``stat == "norm"`` of ``phase`` (default: `gradient_phase`).
    When a layer has several gradient tensors in one step (weight and bias),
    they are combined as one vector: ``sqrt(sum of squared norms)``.
    Non-finite norms are left out of the mean and max (the report lists them
    under "first non-finite").
    """
    rows = list(rows)
    phase = phase or gradient_phase(rows)
    # Per module and step: squared norms summed (a downsampled row's "hi" is its bin's max).
    per_step: dict[str, dict[int, list[float]]] = {}
    for row in rows:
        if row["phase"] != phase or row["stat"] != "norm":
            continue
        steps = per_step.setdefault(row["module"], {})
        sums = steps.setdefault(row["step"], [0.0, 0.0])
        value: float = row["value"]
        high: float = row.get("hi", value)
        sums[0] += value**2
        sums[1] += high**2
    result = []
    for module, steps in per_step.items():
        norms = [math.sqrt(v) for v, _ in steps.values() if math.isfinite(v)]
        highs = [math.sqrt(h) for _, h in steps.values() if math.isfinite(h)]
        if norms:
            top = max(highs) if highs else max(norms)
            result.append(LayerGradient(module, sum(norms) / len(norms), top, len(norms)))
    rank = {
        name: index
        for index, name in enumerate(module_order(r for r in rows if r["phase"] == "forward"))
    }
    return sorted(result, key=lambda layer: _forward_rank(layer.module, rank))


def layer_order(rows: Iterable[Row], layers: Iterable[LayerGradient]) -> str:
    """How `gradient_flow` ordered ``layers``, for the axis label: by the forward
    records (a layer is placed by itself or its closest named ancestor), and
    layers without one last, in the order their gradients arrived (backward)."""
    known = {row["module"] for row in rows if row["phase"] == "forward"}
    names = [layer.module for layer in layers]
    unplaced = sum(not _placed(name, known) for name in names)
    if unplaced == 0:
        return "forward order"
    if unplaced == len(names):
        return "gradient-arrival order (no forward statistics to order by)"
    return f"forward order; {unplaced} without forward statistics last, in gradient-arrival order"


def _placed(name: str, known: set[str]) -> bool:
    if name == "":
        return "" in known
    while name:
        if name in known:
            return True
        name = name.rpartition(".")[0]
    return False


def _forward_rank(name: str, rank: dict[str, int]) -> int:
    # Gradients arrive in backward order and parameter records are named
    # "features.0.weight": place each under the closest module that ran forward.
    while True:
        if name in rank:
            return rank[name]
        if not name:
            return len(rank)
        name = name.rpartition(".")[0]


def stat_series(
    rows: Iterable[Row], stat: str, *, phase: str = "forward"
) -> dict[str, list[tuple[int, float]]]:
    """``{label: [(step, value), ...]}`` for one statistic, one line per module (and tensor).

    The label is the module name, or ``module:tensor`` when a module recorded
    several tensors for that statistic.
    """
    rows = [row for row in rows if row["phase"] == phase and row["stat"] == stat]
    tensors: dict[str, set[str]] = {}
    for row in rows:
        tensors.setdefault(row["module"], set()).add(row["tensor"])
    series: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        many = len(tensors[row["module"]]) > 1
        label = f"{row['module']}:{row['tensor']}" if many else row["module"]
        series.setdefault(label, []).append((row["step"], row["value"]))
    for points in series.values():
        points.sort()
    return series


def stat_envelopes(
    rows: Iterable[Row], stat: str, *, phase: str = "forward"
) -> dict[str, list[tuple[int, float, float, float]]]:
    """As `stat_series`, with each point's ``(step, value, lo, hi)``.

    Exact rows have ``lo == hi == value``; downsampled ones
    (`hookscope.viz.digest`) carry their bin's min and max.
    """
    rows = [row for row in rows if row["phase"] == phase and row["stat"] == stat]
    tensors: dict[str, set[str]] = {}
    for row in rows:
        tensors.setdefault(row["module"], set()).add(row["tensor"])
    series: dict[str, list[tuple[int, float, float, float]]] = {}
    for row in rows:
        many = len(tensors[row["module"]]) > 1
        label = f"{row['module']}:{row['tensor']}" if many else row["module"]
        value: float = row["value"]
        low: float = row.get("lo", value)
        high: float = row.get("hi", value)
        point = (int(row["step"]), value, low, high)
        series.setdefault(label, []).append(point)
    for points in series.values():
        points.sort()
    return series


def flat_value(series: Mapping[str, Iterable[tuple[int, float, float, float]]]) -> float | None:
    """The one value every point of every series has (e.g. a zero fraction that is always 0), else None."""
    seen: float | None = None
    for points in series.values():
        for _, value, lo, hi in points:
            for v in (value, lo, hi):
                if not math.isfinite(v) or (seen is not None and v != seen):
                    return None
                seen = v
    return seen
