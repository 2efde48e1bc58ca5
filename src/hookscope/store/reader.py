"""Reading a run store (or a legacy JSONL run) lazily: only the files and rows asked for.

`open_run` finds one monitored model's results in a run directory; `RunStore`
scans them writer by writer as Arrow tables, with a filter pushed down to
the Parquet files (a step range skips whole files by their statistics, a
module or stat filter is applied while reading); `read_run` is the pandas
front door. Legacy ``monitor*.jsonl`` runs come through the same interface
(`hookscope.store.jsonl`), so the report and every other reader need not
know the format.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from hookscope.errors import UsageError, require_extra
from hookscope.store import layout
from hookscope.store.jsonl import JsonlFile
from hookscope.store.locks import wait_released
from hookscope.store.schema import SCHEMAS

Table = Literal["records", "alerts", "tensors"]
_PHASE_ORDER = {"forward": 0, "backward": 1, "param": 2}


@dataclass
class RunStore:
    """One monitored model's results: a Parquet store folder or legacy JSONL files.

    Attributes:
        path: the store folder (or, for JSONL, the run directory).
        kind: ``"parquet"`` or ``"jsonl"``.
        writers: writer labels (``main``, ``rank<N>``, ``pid<PID>``), first writer first.
        files: for JSONL, each writer's file.
        notes: problems met while reading (skipped lines, unreadable files).
    """

    path: Path
    kind: Literal["parquet", "jsonl"]
    writers: tuple[str, ...]
    files: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _jsonl: dict[str, JsonlFile] = field(default_factory=dict, repr=False)

    def scan(
        self,
        table: Table = "records",
        *,
        writer: str | None = None,
        columns: Sequence[str] | None = None,
        where: ds.Expression | None = None,
        dictionary: bool = False,
    ) -> Iterator[pa.Table]:
        """Tables of ``table`` rows of one writer (default: every writer in turn).

        Args:
            table: ``"records"``, ``"alerts"`` or ``"tensors"``.
            writer: one writer's label.
            columns: only these columns.
            where: a ``pyarrow.dataset`` filter, pushed down to the files.
            dictionary: read the name columns of Parquet files as dictionary
                arrays (names decoded once per batch, not once per row), in
                this thread only (bounded memory for one streaming pass).
        """
        for label in (writer,) if writer is not None else self.writers:
            if self.kind == "jsonl":
                yield from self._scan_jsonl(table, label, columns, where)
                continue
            paths = [str(p.path) for p in layout.parts(self.path / table) if p.writer == label]
            if not paths:
                continue
            fmt: Any = "parquet"
            if dictionary:
                names = ["phase", "module", "tensor", "stat"]
                options = ds.ParquetReadOptions(dictionary_columns=names)
                fmt = ds.ParquetFileFormat(read_options=options)
            data = ds.dataset(paths, format=fmt)
            # Little read-ahead: memory stays at a few batches whatever the run's size.
            scanned = data.to_batches(
                columns=list(columns) if columns else None,
                filter=where,
                batch_size=1 << 19,
                batch_readahead=2,
                fragment_readahead=1,
                # a one-pass reader (the report) decodes in its own thread: its memory stays flat
                use_threads=not dictionary,
            )
            for batch in scanned:
                if batch.num_rows:
                    yield pa.Table.from_batches([batch])

    def _scan_jsonl(
        self, table: Table, label: str, columns: Sequence[str] | None, where: Any
    ) -> Iterator[pa.Table]:
        source = self._file(label)
        if table == "tensors":
            return
        try:
            chunks = source.batches() if table == "records" else iter([source.alerts_table()])
            for chunk in chunks:
                out = chunk.filter(where) if where is not None else chunk
                if columns:
                    out = out.select(list(columns))
                if out.num_rows:
                    yield out
        except OSError as exc:
            note = (
                f"{source.path.name} is unreadable ({exc.strerror or type(exc).__name__}); left out"
            )
            if note not in self.notes:
                self.notes.append(note)
            source.scanned = True
        for note in source.faults.notes():
            if note not in self.notes:
                self.notes.append(note)

    def _file(self, label: str) -> JsonlFile:
        if label not in self._jsonl:
            rank = int(label[4:]) if label.startswith("rank") else 0
            self._jsonl[label] = JsonlFile(self.files[label], rank)
        return self._jsonl[label]

    def read(self, table: Table = "records", **options: Any) -> pa.Table:
        """Every matching row of ``table`` as one Arrow table (see `scan`)."""
        parts = list(self.scan(table, **options))
        if not parts:
            schema = SCHEMAS[table]
            columns = options.get("columns")
            if columns:
                schema = pa.schema([schema.field(c) for c in columns])
            return schema.empty_table()
        return pa.concat_tables(parts)

    def meta(self, writer: str) -> dict[str, Any]:
        """``writers/<writer>.json``: rank, world size, ranks mode, pid, and counts once closed."""
        if self.kind == "jsonl":
            return {"writer": writer, "format": "jsonl"}
        return _json(self.path / layout.WRITERS / f"{writer}.json") or {"writer": writer}

    def first_nonfinite(self, writer: str | None = None) -> dict[str, Any] | None:
        """The first NaN/Inf record (step, phase, module, tensor, rank): earliest over writers."""
        found = []
        for label in (writer,) if writer is not None else self.writers:
            if self.kind == "jsonl":
                source = self._file(label)
                if not source.scanned:
                    source.alerts_table()
                first = source.first_nonfinite
            else:
                first = _json(self.path / layout.NONFINITE / f"{label}.json")
            if first:
                found.append(first)
        return min(found, key=_order) if found else None


def _order(x: dict[str, Any]) -> tuple[float, int, float]:
    step, rank = x.get("step"), x.get("rank")
    return (
        step if isinstance(step, (int, float)) else math.inf,
        _PHASE_ORDER.get(str(x.get("phase")), 3),
        rank if isinstance(rank, (int, float)) else math.inf,
    )


def _json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def open_run(path: str | os.PathLike[str], *, model: int = 0) -> RunStore | None:
    """The results of model ``model`` in run directory ``path`` (or a store folder itself).

    Returns None when ``path`` holds no monitor results for that model.

    Raises:
        UsageError: ``path`` is not a directory.
    """
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"run directory not found: {str(root)!r}")
    if layout.is_store(root):
        folder: Path | None = root
    else:
        folder = root / layout.store_name(model)
        if not layout.is_store(folder):
            folder = None
    if folder is not None:
        labels = {p.writer for table in layout.TABLES for p in layout.parts(folder / table)}
        labels |= {p.stem for p in (folder / layout.WRITERS).glob("*.json")}
        writers = tuple(sorted(labels, key=layout.writer_order))
        return RunStore(folder, "parquet", writers)
    files = dict(layout.jsonl_files(root, model))
    if not files:
        return None
    return RunStore(root, "jsonl", tuple(files), files=files)


def _isin(column: str, values: Sequence[Any] | str | int | None) -> ds.Expression | None:
    if values is None:
        return None
    if isinstance(values, (str, int)):
        values = [values]
    return pc.field(column).isin(list(values))


def filter_of(
    *,
    modules: Sequence[str] | str | None = None,
    stats: Sequence[str] | str | None = None,
    phases: Sequence[str] | str | None = None,
    steps: tuple[int | None, int | None] | None = None,
    ranks: Sequence[int] | int | None = None,
) -> ds.Expression | None:
    """One dataset filter from `read_run`'s options (None when nothing is filtered)."""
    parts = [
        e
        for e in (
            _isin("module", modules),
            _isin("stat", stats),
            _isin("phase", phases),
            _isin("rank", ranks),
        )
        if e is not None
    ]
    if steps is not None:
        if not (isinstance(steps, tuple) and len(steps) == 2):
            raise UsageError(f"steps must be a (lo, hi) tuple, got {steps!r}")
        lo, hi = steps
        if lo is not None:
            parts.append(pc.field("step") >= lo)
        if hi is not None:
            parts.append(pc.field("step") <= hi)
    if not parts:
        return None
    out = parts[0]
    for part in parts[1:]:
        out = out & part
    return out


def read_run(
    path: str | os.PathLike[str],
    *,
    modules: Sequence[str] | str | None = None,
    stats: Sequence[str] | str | None = None,
    phases: Sequence[str] | str | None = None,
    steps: tuple[int | None, int | None] | None = None,
    ranks: Sequence[int] | int | None = None,
    model: int = 0,
    table: Table = "records",
) -> Any:
    """A pandas ``DataFrame`` of a run's records, read lazily: only the rows asked for.

    Works on a run directory (``hookscope run --monitor --out DIR``, a trainer
    callback's folder), a store folder itself, and legacy ``monitor.jsonl``
    runs. Filters are pushed down to the files: a step range skips whole
    files, and no unselected row is turned into a Python object.

    Args:
        path: the run directory (or a store folder).
        modules: only these module (or parameter) names.
        stats: only these statistics (``"mean"``, ``"norm"``, ...).
        phases: only these phases (``"forward"``, ``"backward"``, ``"param"``).
        steps: ``(lo, hi)``, both included; None on a side leaves it open.
        ranks: only these ranks.
        model: which monitored model (0 for ``monitor/``, N for ``monitor-N/``).
        table: ``"records"`` (statistics), ``"alerts"`` or ``"tensors"``.

    Returns:
        Columns ``step, phase, module, tensor, stat, value, rank`` for records
        (as ``Monitor.to_pandas()``); the alerts' or tensors' columns otherwise.

    Raises:
        UsageError: ``path`` holds no monitor results, or an option is malformed.
        MissingExtraError: pandas is not installed (``hookscope[pandas]``).
    """
    require_extra("pandas", "pandas")
    if table not in SCHEMAS:
        raise UsageError(f"table must be one of {sorted(SCHEMAS)}, got {table!r}")
    store = open_run(path, model=model)
    if store is None:
        raise UsageError(f"{str(path)!r} holds no monitor results (model {model})")
    where = filter_of(
        modules=modules,
        stats=None if table != "records" else stats,
        phases=phases,
        steps=steps,
        ranks=ranks,
    )
    return store.read(table, where=where).to_pandas()


def wait_closed(first: Path, world_size: int, timeout: float) -> list[str]:
    """Wait until every rank's writer of the store (or JSONL file) ``first`` has closed.

    Used by rank 0 before the merged report. Returns the ranks' labels still
    open (or absent) after ``timeout`` seconds.
    """
    labels = [f"rank{r}" for r in range(world_size)]
    if first.suffix == ".jsonl":
        name = first.name.replace(".rank0.", ".rank{}.")
        paths = [first.with_name(name.format(r)) for r in range(world_size)]
    else:
        paths = [first / layout.WRITERS / f"{label}.lock" for label in labels]
    late = set(wait_released(paths, timeout))
    return [label for label, path in zip(labels, paths, strict=True) if path in late]
