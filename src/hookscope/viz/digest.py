"""One streaming pass over a writer's records: what the report draws, in bounded memory.

A short run (at most `EXACT_ROWS` records a writer) comes back whole, as
exact rows. A long one comes back downsampled: steps are cut into at most
`MAX_BINS` equal bins and each bin of each drawn series gives one row
``{"step": last step of the bin, "value": mean of the finite values, "lo":
min, "hi": max}`` — the min/max envelope the plots draw. Drawn series are
the forward `REPORT_STATS` of the first `FORWARD_LAYERS` layers (in the
order they ran), every ``norm`` (gradient flow), and the magnitudes and
NaN/Inf counts of every layer when several writers are compared.

The pass holds dense arrays (series x bins) and never one Python object
per record: names come as Arrow dictionaries, rows are mapped to series
ids with vectorised look-ups and folded in with ``numpy`` (``bincount``,
``minimum.at``). The bin width doubles whenever the steps outgrow the bins,
so one pass suffices, whatever the run's length. The rows of the last step
are kept exact for the per-layer table. Pure data: no plotting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hookscope.store import RunStore
from hookscope.viz.records import Row

#: Records of one writer kept exact (as rows) before the report downsamples.
EXACT_ROWS = 200_000
#: Bins per series at most in a downsampled run.
MAX_BINS = 200
#: Forward statistics the report draws (plus every phase's ``norm``).
REPORT_STATS = ("mean", "std", "absmax", "zero_frac")
#: Statistics the Ranks section compares when there are several writers.
RANK_STATS = ("absmax", "rms", "norm", "std", "nan_count", "inf_count")
#: Forward layers whose statistics are drawn (the report's figures show no more).
FORWARD_LAYERS = 96
_NAMES = ("phase", "module", "tensor", "stat")


@dataclass
class Digest:
    """What one writer's records came to.

    Attributes:
        steps: distinct steps recorded.
        records: records read.
        width: steps per bin (1: ``rows`` are exact).
        rows: exact rows, or one downsampled row per drawn series and bin.
        last_rows: every record of the last step, exact.
    """

    steps: int = 0
    records: int = 0
    width: int = 1
    rows: list[Row] = field(default_factory=list)
    last_rows: list[Row] = field(default_factory=list)


class _Bins:
    """Dense per-series, per-bin min / max / sum / count; series ids grow as names appear."""

    def __init__(self, ranks: bool) -> None:
        self.ranks = ranks
        self.stats = frozenset((*REPORT_STATS, "norm", *(RANK_STATS if ranks else ())))
        self.width = 1
        self.origin: int | None = None
        self.ids: dict[tuple[str, str, str, str], int] = {}
        self.keys: list[tuple[str, str, str, str]] = []
        self.drawn: list[bool] = []
        self.forward: dict[str, int] = {}  # forward layers in the order they ran
        size = (0, MAX_BINS)
        self.lo, self.hi = np.full(size, np.inf), np.full(size, -np.inf)
        self.sum, self.count = np.zeros(size), np.zeros(size, dtype=np.int64)
        self.last = np.full(MAX_BINS, -1, dtype=np.int64)

    def _id(self, key: tuple[str, str, str, str]) -> int:
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.keys)
            self.keys.append(key)
            phase, module, _, stat = key
            if phase == "forward":
                self.forward.setdefault(module, len(self.forward))
            wanted = (
                phase == "forward"
                and stat in REPORT_STATS
                and self.forward[module] < FORWARD_LAYERS
            )
            self.drawn.append(wanted or stat == "norm" or (self.ranks and stat in RANK_STATS))
        return found

    def _series(self, batch: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, series ids)``: the rows of a statistic the report may draw, and their series.

        Names are decoded once per distinct combination in the batch, never per row.
        """
        codes, dicts = [], []
        for name in _NAMES:
            column = batch[name].combine_chunks()
            if not pa.types.is_dictionary(column.type):
                column = pc.dictionary_encode(column)
            codes.append(column.indices.to_numpy(zero_copy_only=False))
            dicts.append(column.dictionary.to_pylist())
        wanted = self.stats
        stat_ok = np.array([name in wanted for name in dicts[3]] + [False], dtype=bool)
        rows = np.flatnonzero(stat_ok[codes[3]])
        sizes = [max(len(d), 1) for d in dicts]
        local = codes[0][rows].astype(np.int64)
        for code, size in zip(codes[1:], sizes[1:], strict=True):
            local = local * size + code[rows]
        if not len(local):
            return rows, local
        top = int(local.max()) + 1
        if top <= 1 << 24:
            seen = np.zeros(top, dtype=bool)
            seen[local] = True
            present = np.flatnonzero(seen)
        else:  # pragma: no cover - billions of name combinations
            present = np.unique(local)
        lut = np.zeros(top, dtype=np.int64)
        for combo in present.tolist():
            parts, rest = [], combo
            for size in reversed(sizes):
                rest, index = divmod(rest, size)
                parts.append(index)
            names = tuple(d[i] for d, i in zip(dicts, reversed(parts), strict=True))
            lut[combo] = self._id(names)
        self._grow()
        return rows, lut[local]

    def _grow(self) -> None:
        extra = len(self.keys) - self.lo.shape[0]
        if extra > 0:
            pad = max(extra, 64)
            self.lo = np.vstack([self.lo, np.full((pad, MAX_BINS), np.inf)])
            self.hi = np.vstack([self.hi, np.full((pad, MAX_BINS), -np.inf)])
            self.sum = np.vstack([self.sum, np.zeros((pad, MAX_BINS))])
            self.count = np.vstack([self.count, np.zeros((pad, MAX_BINS), dtype=np.int64)])

    def add(self, batch: pa.Table) -> None:
        rows, series = self._series(batch)
        drawn = np.asarray(self.drawn, dtype=bool)[series]
        rows, series = rows[drawn], series[drawn]
        steps = batch["step"].to_numpy()[rows]
        values = batch["value"].to_numpy()[rows]
        if not len(steps):
            return
        if self.origin is None:
            self.origin = int(steps.min())
        offsets = np.maximum(steps - self.origin, 0)
        while int(offsets.max()) // self.width >= MAX_BINS:
            self._coarsen()
        bins = offsets // self.width
        np.maximum.at(self.last, bins, steps)
        finite = np.isfinite(values)
        flat = (series * MAX_BINS + bins)[finite]
        values = values[finite]
        np.minimum.at(self.lo.reshape(-1), flat, values)
        np.maximum.at(self.hi.reshape(-1), flat, values)
        size = self.sum.size
        self.sum += np.bincount(flat, weights=values, minlength=size).reshape(self.sum.shape)
        self.count += np.bincount(flat, minlength=size).reshape(self.count.shape)

    def _coarsen(self) -> None:
        """Twice as many steps per bin: bins ``2i`` and ``2i+1`` become bin ``i``."""
        half = MAX_BINS // 2

        def fold(a: np.ndarray, op: Any, empty: Any) -> np.ndarray:
            out = np.full_like(a, empty)
            out[..., :half] = op(a[..., 0::2], a[..., 1::2])
            return out

        self.lo = fold(self.lo, np.minimum, np.inf)
        self.hi = fold(self.hi, np.maximum, -np.inf)
        self.sum = fold(self.sum, np.add, 0.0)
        self.count = fold(self.count, np.add, 0)
        self.last = fold(self.last, np.maximum, -1)
        self.width *= 2

    def coarsen_to(self, width: int) -> None:
        while self.width < width:
            self._coarsen()

    def rows(self) -> list[Row]:
        out: list[Row] = []
        used = np.flatnonzero(self.last >= 0)
        for sid, key in enumerate(self.keys):
            if not self.drawn[sid]:
                continue
            phase, module, tensor, stat = key
            for b in used.tolist():
                n = int(self.count[sid, b])
                if n == 0:
                    continue
                out.append(
                    {
                        "step": int(self.last[b]),
                        "phase": phase,
                        "module": module,
                        "tensor": tensor,
                        "stat": stat,
                        "value": float(self.sum[sid, b]) / n,
                        "lo": float(self.lo[sid, b]),
                        "hi": float(self.hi[sid, b]),
                    }
                )
        return out


def _exact(batch: pa.Table) -> list[Row]:
    columns = ["step", *_NAMES, "value"]
    out = batch.select(columns)
    for name in _NAMES:
        if pa.types.is_dictionary(out[name].type):
            out = out.set_column(
                out.schema.get_field_index(name), name, out[name].cast(pa.string())
            )
    return out.to_pylist()


def digest(store: RunStore, writer: str, *, ranks: bool = False) -> tuple[Digest, _Bins]:
    """Read one writer's records once; see the module docstring."""
    out = Digest()
    bins = _Bins(ranks)
    steps: set[int] = set()
    exact: list[Row] | None = []
    last_step: float = -math.inf
    last_batches: list[pa.Table] = []
    for batch in store.scan("records", writer=writer, dictionary=True):
        out.records += batch.num_rows
        step = batch["step"].to_numpy()
        changes = np.flatnonzero(np.diff(step)) + 1  # steps come in runs
        steps.update(step[np.concatenate(([0], changes))].tolist())
        top = int(step.max())
        if top > last_step:
            last_step, last_batches = top, []
        if top == last_step:
            last_batches.append(batch.filter(pc.equal(batch["step"], top)))
        if exact is not None and out.records <= EXACT_ROWS:
            exact.extend(_exact(batch))
        else:
            exact = None
        bins.add(batch)
    out.steps = len(steps)
    out.last_rows = [row for b in last_batches for row in _exact(b)]
    out.rows = exact or []
    return out, bins


def digest_writers(store: RunStore) -> list[Digest]:
    """`digest` of every writer; downsampled ones share one bin width."""
    several = len(store.writers) > 1
    found = [digest(store, writer, ranks=several) for writer in store.writers]
    if all(d.rows or not d.records for d, _ in found):
        return [d for d, _ in found]  # every writer exact
    width = max(bins.width for _, bins in found)
    for d, bins in found:
        bins.coarsen_to(width)
        d.width, d.rows = width, bins.rows()
    return [d for d, _ in found]
