"""One streaming pass over a writer's records: what the report draws, in bounded memory.

A short run comes back whole, as exact rows. A long one comes back
downsampled: steps are cut into at most `MAX_BINS` equal bins per series
and each bin gives one row ``{"step": last step of the bin, "value": mean of
the finite values, "lo": min, "hi": max}`` — the per-step min/max envelope the
plots draw — for the statistics the report shows (`REPORT_STATS`, and every
``norm``). The bin width doubles while reading whenever the bins would
exceed twice `MAX_BINS`, so one pass suffices and memory stays bounded by
the number of series times `MAX_BINS`. The rows of the last step are kept
exact for the per-layer table. Pure data: no plotting.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from hookscope.store import RunStore
from hookscope.viz.records import Row

#: Records of one writer kept exact (as rows) before the report downsamples.
EXACT_ROWS = 200_000
#: Bins per series at most in a downsampled run.
MAX_BINS = 256
#: Forward statistics the report draws; every phase's ``norm`` is kept too.
REPORT_STATS = ("mean", "std", "absmax", "zero_frac", "rms", "nan_count", "inf_count")
_KEYS = ["phase", "module", "tensor", "stat"]
_PENDING_ROWS = 1_000_000


@dataclass
class Digest:
    """What one writer's records came to.

    Attributes:
        steps: distinct steps recorded.
        records: records read.
        width: steps per bin (1: ``rows`` are exact).
        rows: exact rows, or one downsampled row per series and bin.
        last_rows: every record of the last step, exact.
    """

    steps: int = 0
    records: int = 0
    width: int = 1
    rows: list[Row] = field(default_factory=list)
    last_rows: list[Row] = field(default_factory=list)


class _Bins:
    """Per-series, per-bin min / max / sum / count / last step, merged as batches come."""

    def __init__(self) -> None:
        self.width = 1
        self.state: pa.Table | None = None
        self.pending: list[pa.Table] = []
        self.pending_rows = 0

    def add(self, batch: pa.Table) -> None:
        value = batch["value"]
        finite = pc.if_else(pc.is_finite(value), value, pa.scalar(None, pa.float64()))
        binned = pa.table(
            {
                **{k: batch[k] for k in _KEYS},
                "bin": pc.divide(batch["step"], self.width),
                "value": finite,
                "step": batch["step"],
            }
        )
        part = binned.group_by([*_KEYS, "bin"], use_threads=False).aggregate(
            [
                ("value", "min"),
                ("value", "max"),
                ("value", "sum"),
                ("value", "count"),
                ("step", "max"),
            ]
        )
        self.pending.append(part.rename_columns([*_KEYS, "bin", "lo", "hi", "sum", "n", "last"]))
        self.pending_rows += part.num_rows
        if self.pending_rows > _PENDING_ROWS:
            self.merge()

    def merge(self) -> None:
        tables = ([self.state] if self.state is not None else []) + self.pending
        self.pending, self.pending_rows = [], 0
        if not tables:
            return
        table = pa.concat_tables(tables)
        while True:
            bins = table["bin"]
            span = pc.max(bins).as_py() - pc.min(bins).as_py() + 1 if table.num_rows else 0
            if span <= 2 * MAX_BINS:
                break
            self.width *= 2
            table = table.set_column(4, "bin", pc.divide(bins, 2))
        self.state = _regroup(table)

    def rebin(self, width: int) -> None:
        """Coarsen to ``width`` steps per bin (a multiple of the current width)."""
        self.merge()
        if self.state is None or width == self.width:
            self.width = width
            return
        factor = width // self.width
        self.width = width
        self.state = _regroup(self.state.set_column(4, "bin", pc.divide(self.state["bin"], factor)))

    def rows(self) -> list[Row]:
        if self.state is None:
            return []
        out: list[Row] = []
        for row in self.state.sort_by([("last", "ascending")]).to_pylist():
            n = row["n"]
            out.append(
                {
                    "step": row["last"],
                    "phase": row["phase"],
                    "module": row["module"],
                    "tensor": row["tensor"],
                    "stat": row["stat"],
                    "value": row["sum"] / n if n else math.nan,
                    "lo": math.nan if row["lo"] is None else row["lo"],
                    "hi": math.nan if row["hi"] is None else row["hi"],
                }
            )
        return out


def _regroup(table: pa.Table) -> pa.Table:
    out = table.group_by([*_KEYS, "bin"], use_threads=False).aggregate(
        [("lo", "min"), ("hi", "max"), ("sum", "sum"), ("n", "sum"), ("last", "max")]
    )
    return out.rename_columns([*_KEYS, "bin", "lo", "hi", "sum", "n", "last"])


def _exact(batch: pa.Table) -> list[Row]:
    return [
        {k: row[k] for k in ("step", "phase", "module", "tensor", "stat", "value")}
        for row in batch.to_pylist()
    ]


def digest(store: RunStore, writer: str) -> tuple[Digest, _Bins]:
    """Read one writer's records once; see the module docstring."""
    out = Digest()
    bins = _Bins()
    steps: set[int] = set()
    exact: list[Row] | None = []
    last_step, last_batches = -math.inf, []
    drawn = pc.field("stat").isin(list(REPORT_STATS)) | (pc.field("stat") == "norm")
    for batch in store.scan("records", writer=writer):
        out.records += batch.num_rows
        steps.update(pc.unique(batch["step"]).to_pylist())
        top = pc.max(batch["step"]).as_py()
        if top > last_step:
            last_step, last_batches = top, []
        if top == last_step:
            last_batches.append(batch.filter(pc.field("step") == top))
        if exact is not None and out.records <= EXACT_ROWS:
            exact.extend(_exact(batch))
        else:
            exact = None
        bins.add(batch.filter(drawn))
    out.steps = len(steps)
    out.last_rows = [row for b in last_batches for row in _exact(b)]
    out.rows = exact or []
    return out, bins


def digest_writers(store: RunStore) -> list[Digest]:
    """`digest` of every writer, downsampled ones to one common bin width."""
    found = [digest(store, writer) for writer in store.writers]
    if all(d.rows or not d.records for d, _ in found):
        return [d for d, _ in found]  # every writer exact
    for _, bins in found:
        bins.merge()
    width = max(bins.width for _, bins in found)
    for d, bins in found:
        bins.rebin(width)
        d.width, d.rows = width, bins.rows()
    return [d for d, _ in found]


def envelope(rows: Iterable[Row]) -> bool:
    """Whether ``rows`` are downsampled (they carry ``lo``/``hi``)."""
    return any("hi" in row for row in rows)
