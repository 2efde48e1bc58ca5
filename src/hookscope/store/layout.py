"""Where a run store keeps its files, and how their names are read back.

A run directory holds one store per monitored model (``monitor/``, then
``monitor-1/``, ``monitor-2/`` ... for further models a script runs)::

    RUN_DIR/
      monitor/
        records/<writer>-<first>[-<last>].parquet   statistics, one row per record
        alerts/<writer>-<first>[-<last>].parquet    alerts (only parts that had some)
        tensors/<writer>-<first>.parquet            shape and dtype, when they change
        writers/<writer>.json                       who wrote: rank, world size, pid, counts
        writers/<writer>.lock                       held while the writer is open
        nonfinite/<writer>.json                     the first NaN/Inf, written the moment it is seen

``<writer>`` is ``main`` (one process), ``rank<N>`` (rank N of a
torch.distributed run) or ``pid<PID>`` (a second process that found the
store locked): no two writers share a file. ``<first>`` numbers the writer's
flushes; a ``<first>-<last>`` file is a compaction of the parts
``first..last`` and replaces them (a reader that finds both, after a crash
between the rename and the deletions, keeps the compacted file only).
Files being written start with ``.`` and end ``.tmp``: pandas, pyarrow,
polars and DuckDB skip them, and they are renamed into place whole.

Legacy runs hold ``monitor.jsonl`` (``monitor.rank<N>.jsonl``,
``monitor.pid<PID>.jsonl``, ``monitor-1.jsonl`` ...) instead, one JSON
object per step (`hookscope.sinks.jsonl`); the reader opens them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: Format name and version written into ``writers/<writer>.json``.
FORMAT = "hookscope-run-store"
VERSION = 1
#: The tables of a store, one folder each.
TABLES = ("records", "alerts", "tensors")
WRITERS = "writers"
NONFINITE = "nonfinite"

_STORE = re.compile(r"monitor(?:-(\d+))?")
_JSONL = re.compile(r"monitor(?:-(\d+))?(?:\.(rank\d+|pid\d+))?\.jsonl")
_PART = re.compile(r"(main|rank\d+|pid\d+)-(\d+)(?:-(\d+))?\.parquet")


def store_name(index: int) -> str:
    """``monitor`` for the first monitored model, ``monitor-N`` for the N-th further one."""
    return "monitor" if index == 0 else f"monitor-{index}"


def part_name(writer: str, first: int, last: int | None = None) -> str:
    """The file name of flush ``first`` (or of the compaction of ``first..last``)."""
    return (
        f"{writer}-{first:06d}.parquet"
        if last is None
        else f"{writer}-{first:06d}-{last:06d}.parquet"
    )


@dataclass(frozen=True)
class Part:
    """One Parquet file of a table: its writer and the flushes it covers."""

    path: Path
    writer: str
    first: int
    last: int


def parts(folder: Path) -> list[Part]:
    """The live parts of one table folder, by writer then flush number.

    A part covered by a compacted file of the same writer is left out.
    """
    found: list[Part] = []
    try:
        names = [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return []
    for path in names:
        match = _PART.fullmatch(path.name)
        if match is not None:
            first = int(match.group(2))
            last = int(match.group(3)) if match.group(3) else first
            found.append(Part(path, match.group(1), first, last))
    spans = [(p.writer, p.first, p.last) for p in found if p.last > p.first]
    live = [
        p
        for p in found
        if not any(
            w == p.writer and lo <= p.first and p.last <= hi and (lo, hi) != (p.first, p.last)
            for w, lo, hi in spans
        )
    ]
    return sorted(live, key=lambda p: (writer_order(p.writer), p.first))


def writer_order(label: str) -> tuple[int, int]:
    """Sort key: ``main``, then ranks by number, then pids."""
    if label == "main":
        return (0, 0)
    digits = label.lstrip("rankpid")
    return (1 if label.startswith("rank") else 2, int(digits) if digits.isdigit() else 0)


def stores(run_dir: Path) -> list[Path]:
    """The store folders in ``run_dir`` (``monitor``, ``monitor-1``, ...), in model order."""
    found = []
    for path in run_dir.iterdir() if run_dir.is_dir() else ():
        match = _STORE.fullmatch(path.name)
        if match is not None and path.is_dir() and (path / "records").is_dir():
            found.append((int(match.group(1) or 0), path))
    return [path for _, path in sorted(found)]


def jsonl_files(run_dir: Path, index: int = 0) -> list[tuple[str, Path]]:
    """``(writer, path)`` of the legacy JSONL files of model ``index``, in writer order."""
    found = []
    for path in run_dir.glob("monitor*.jsonl"):
        match = _JSONL.fullmatch(path.name)
        if match is not None and int(match.group(1) or 0) == index:
            found.append((match.group(2) or "main", path))
    return sorted(found, key=lambda item: writer_order(item[0]))


def is_store(path: Path) -> bool:
    """Whether ``path`` is a store folder itself (it has ``records/``)."""
    return path.is_dir() and (path / "records").is_dir()
