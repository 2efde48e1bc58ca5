"""Writing Monitor results into a run store: columnar buffers, one Parquet part per flush.

`StoreWriter.write` appends a step's records to column lists (no per-record
object is made when the result still holds its grouped values); a flush
turns the buffers into one Arrow table and writes it to a temporary file
that is renamed into place, so every file a reader sees is whole. A flush
happens when ``flush_seconds`` have passed since the last one (checked at
each write), when ``flush_rows`` are buffered, at `close`, and at once for a
step with a NaN or Inf in it (the record a dying run needs). Every
``compact_every`` parts are merged into one file (`hookscope.store.layout`).

Failures to write (disk full, a removed folder) never stop training: the
writer warns once, keeps no more data, and ``written_steps`` /
``written_rows`` count only what reached the disk.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
import warnings
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from hookscope.errors import HookscopeWarning, UsageError
from hookscope.store import layout
from hookscope.store.locks import try_lock
from hookscope.store.result import StepLike
from hookscope.store.schema import ALERTS, RECORDS, TENSORS, WRITE_OPTIONS

_COUNTS = frozenset({"nan_count", "inf_count"})


class StoreWriter:
    """Append Monitor results to the run store in ``folder`` (created, with parents).

    Args:
        folder: the store folder (``RUN_DIR/monitor``).
        writer: ``"main"``, ``"rank<N>"``; a second process that finds the
            label locked writes as ``pid<PID>`` (with a warning).
        flush_seconds: longest time buffered rows wait for a flush (> 0).
        flush_rows: flush once this many records are buffered (> 0).
        compact_every: merge this many parts into one file (>= 2).

    Raises:
        UsageError: an option is out of range, or ``folder`` is a file.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        writer: str = "main",
        flush_seconds: float = 1.0,
        flush_rows: int = 200_000,
        compact_every: int = 64,
    ) -> None:
        if not flush_seconds > 0:
            raise UsageError(f"flush_seconds must be > 0, got {flush_seconds!r}")
        if flush_rows < 1:
            raise UsageError(f"flush_rows must be >= 1, got {flush_rows!r}")
        if compact_every < 2:
            raise UsageError(f"compact_every must be >= 2, got {compact_every!r}")
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise UsageError(f"run store {str(self.folder)!r} is a file, not a folder")
        for table in (*layout.TABLES, layout.WRITERS, layout.NONFINITE):
            (self.folder / table).mkdir(parents=True, exist_ok=True)
        self.flush_seconds, self.flush_rows, self.compact_every = (
            flush_seconds,
            flush_rows,
            compact_every,
        )
        self._lock_file: IO[str] | None = None
        self.writer = self._claim(writer)
        self._pid = os.getpid()
        self._mutex = threading.Lock()
        self._clear()
        self._alerts: list[tuple[Any, ...]] = []
        self._tensors: list[tuple[Any, ...]] = []
        self._last_tensors: tuple[Any, ...] = ()
        self._seq = 0
        self._pending: list[int] = []  # flush numbers not compacted yet
        self._last_flush = time.monotonic()
        self._meta: dict[str, Any] = {}
        self._nonfinite_written = False
        self.failed: BaseException | None = None
        self.written_steps = 0
        self.written_rows = 0
        self.dropped_steps = 0
        self.closed = False

    def _claim(self, writer: str) -> str:
        """Lock ``writers/<writer>.lock``; a live holder elsewhere makes this ``pid<PID>``."""
        for label in (writer, f"pid{os.getpid()}"):
            file = (self.folder / layout.WRITERS / f"{label}.lock").open("a", encoding="utf-8")
            if try_lock(file):
                self._lock_file = file
                if label != writer:
                    warnings.warn(
                        f"run store {self.folder} is being written by another process as "
                        f"{writer!r}; writing as {label!r} beside it",
                        HookscopeWarning,
                        stacklevel=4,
                    )
                for table in layout.TABLES:  # a fresh writer replaces its label's old files
                    for part in layout.parts(self.folder / table):
                        if part.writer == label:
                            part.path.unlink(missing_ok=True)
                (self.folder / layout.NONFINITE / f"{label}.json").unlink(missing_ok=True)
                return label
            file.close()
        raise UsageError(f"run store {self.folder} is locked by another writer")  # pragma: no cover

    def _clear(self) -> None:
        self._step: list[int] = []
        self._phase: list[str] = []
        self._module: list[str] = []
        self._tensor: list[str] = []
        self._stat: list[str] = []
        self._value: list[float] = []
        self._steps_buffered = 0
        self._urgent = False

    def write(self, result: StepLike) -> None:
        """Buffer one step's records, alerts and tensor shapes; flush when due.

        A result with a non-finite value or a non-zero ``nan_count``/``inf_count``
        is flushed at once, as is the first ``first_nonfinite``.
        """
        if self.closed:
            raise UsageError(f"run store writer {self.folder} ({self.writer}) is closed")
        if os.getpid() != self._pid:
            return  # a process forked from the writer writes nothing
        with self._mutex:
            if self.failed is not None:
                self.dropped_steps += 1
                return
            if not self._meta:
                self._write_meta(result)
            self._append(result)
            first = result.first_nonfinite
            if first is not None and not self._nonfinite_written:
                self._urgent = True
            due = time.monotonic() - self._last_flush >= self.flush_seconds
            if self._urgent or due or len(self._value) >= self.flush_rows:
                self._flush()
            if first is not None and not self._nonfinite_written and self.failed is None:
                self._guard(lambda: self._write_json(layout.NONFINITE, _asdict(first)))
                self._nonfinite_written = self.failed is None

    def _append(self, result: StepLike) -> None:
        n_before = len(self._value)
        for (phase, module, tensor), values in _groups(result):
            count = len(values)
            self._phase.extend([phase] * count)
            self._module.extend([module] * count)
            self._tensor.extend([tensor] * count)
            self._stat.extend(values.keys())
            self._value.extend(values.values())
            if not self._urgent and _nonfinite(values):
                self._urgent = True
        self._step.extend([result.step] * (len(self._value) - n_before))
        self._steps_buffered += 1
        for a in result.alerts:
            self._alerts.append((a.step, a.phase, a.module, a.tensor, a.rule, a.value))
        tensors = tuple(result.tensors)
        if tensors and tensors != self._last_tensors:
            self._last_tensors = tensors
            for t in result.tensors:
                shape = "x".join(map(str, t.shape))
                self._tensors.append((result.step, t.phase, t.module, t.tensor, shape, t.dtype))

    def flush(self) -> None:
        """Write what is buffered now (nothing when the buffers are empty)."""
        if os.getpid() != self._pid:
            return
        with self._mutex:
            self._flush()

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if self.failed is not None or not (self._steps_buffered or self._alerts or self._tensors):
            self._clear()
            self._alerts, self._tensors = [], []
            return
        seq = self._seq + 1
        rank = self._meta.get("rank", 0)
        records = pa.table(
            {
                "step": pa.array(self._step, pa.int64()),
                "phase": self._phase,
                "module": self._module,
                "tensor": self._tensor,
                "stat": self._stat,
                "value": pa.array(self._value, pa.float64()),
                "rank": pa.array([rank] * len(self._value), pa.int32()),
            },
            schema=RECORDS,
        )
        tables = [("records", records)]
        if self._alerts:
            columns = list(zip(*self._alerts, strict=True))
            tables.append(("alerts", _table(ALERTS, columns, rank)))
        if self._tensors:
            columns = list(zip(*self._tensors, strict=True))
            tables.append(("tensors", _table(TENSORS, columns, rank)))
        steps, rows = self._steps_buffered, len(self._value)
        self._clear()
        self._alerts, self._tensors = [], []
        if self._guard(lambda: self._write_parts(seq, tables)):
            self._seq = seq
            self._pending.append(seq)
            self.written_steps += steps
            self.written_rows += rows
            if len(self._pending) >= self.compact_every:
                self._guard(self._compact)
        else:
            self.dropped_steps += steps

    def _write_parts(self, seq: int, tables: list[tuple[str, pa.Table]]) -> None:
        for name, table in tables:
            _write_atomic(self.folder / name / layout.part_name(self.writer, seq), table)

    def _compact(self) -> None:
        """Merge the pending parts of each table into one file, then delete them."""
        first, last = self._pending[0], self._pending[-1]
        for name in layout.TABLES:
            folder = self.folder / name
            paths = [folder / layout.part_name(self.writer, s) for s in self._pending]
            present = [p for p in paths if p.exists()]
            if not present:
                continue
            table = pa.concat_tables([pq.read_table(p) for p in present])
            _write_atomic(folder / layout.part_name(self.writer, first, last), table)
            for path in present:
                path.unlink()
        self._pending = []

    def _guard(self, action: Any) -> bool:
        """Run a write; an OSError disables the writer with one warning. True on success."""
        try:
            action()
        except OSError as exc:
            self.failed = exc
            reason = exc.strerror or type(exc).__name__
            warnings.warn(
                f"run store {self.folder}: cannot write ({reason}); statistics are no longer "
                f"stored, training goes on ({self.written_steps} step(s) were written)",
                HookscopeWarning,
                stacklevel=4,
            )
            return False
        return True

    def _write_meta(self, result: StepLike, **extra: Any) -> None:
        self._meta = {
            "format": layout.FORMAT,
            "version": layout.VERSION,
            "writer": self.writer,
            "rank": result.rank,
            "world_size": result.world_size,
            "ranks": result.ranks,
            "pid": self._pid,
            "started": time.time(),
        }
        self._guard(lambda: self._write_json(layout.WRITERS, self._meta))

    def _write_json(self, table: str, data: dict[str, Any]) -> None:
        path = self.folder / table / f"{self.writer}.json"
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_text(json.dumps(data, allow_nan=False, default=_plain) + "\n", encoding="utf-8")
        os.replace(temp, path)

    def close(self) -> None:
        """Flush, compact, record the counts in ``writers/<writer>.json`` and unlock (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if os.getpid() != self._pid:
            return
        with self._mutex:
            self._flush()
            if self.failed is None and len(self._pending) > 1:
                self._guard(self._compact)
            if self._meta and self.failed is None:
                counts = {"steps": self.written_steps, "rows": self.written_rows, "closed": True}
                self._guard(lambda: self._write_json(layout.WRITERS, {**self._meta, **counts}))
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                self._lock_file.close()
            self._lock_file = None


def _groups(result: StepLike) -> Any:
    """``((phase, module, tensor), {stat: value})`` of a result, without making records."""
    return result.groups()


def _nonfinite(values: dict[str, float]) -> bool:
    for stat, value in values.items():
        if not math.isfinite(value) or (stat in _COUNTS and value > 0):
            return True
    return False


def _table(schema: pa.Schema, columns: list[tuple[Any, ...]], rank: int) -> pa.Table:
    arrays = [pa.array(list(col), field.type) for col, field in zip(columns, schema, strict=False)]
    arrays.append(pa.array([rank] * len(columns[0]), pa.int32()))
    return pa.Table.from_arrays(arrays, schema=schema)


def _write_atomic(path: Path, table: pa.Table) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(table, temp, **WRITE_OPTIONS)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def _asdict(first: Any) -> dict[str, Any]:
    return {f: getattr(first, f) for f in ("step", "phase", "module", "tensor", "rank")}


def _plain(value: Any) -> Any:
    return str(value)
