"""Run-store sink: Monitor results as Parquet files (`hookscope.store`).

One store folder per monitored model; under torch.distributed each rank
writes its own files (``records/rank<N>-*.parquet``), a second process that
finds the folder's writer locked writes as ``pid<PID>``, and a process forked
from the writer writes nothing. Writing never stops training: a failed write
(disk full) warns once, and ``written_steps`` counts only what reached the disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from hookscope import dist
from hookscope.monitor.records import StepResult
from hookscope.store.writer import StoreWriter


class StoreSink:
    """Write each recorded step into the run store ``folder`` (``RUN_DIR/monitor``).

    Args:
        folder: the store folder (created).
        flush_seconds: longest time a step waits in memory before it is on disk.
        compact_every: parts merged into one file.

    Hook-free: ``write`` is called by `Monitor.step`, never inside a hook.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        flush_seconds: float = 1.0,
        compact_every: int = 64,
    ) -> None:
        rank, world = dist.where()
        self._writer = StoreWriter(
            folder,
            writer=f"rank{rank}" if world > 1 else "main",
            flush_seconds=flush_seconds,
            compact_every=compact_every,
        )
        self.path = Path(folder)

    @property
    def writer(self) -> str:
        """This process's writer label (``main``, ``rank<N>``, ``pid<PID>``)."""
        return self._writer.writer

    @property
    def written_steps(self) -> int:
        """Steps that reached the disk (not those lost to a failed write)."""
        return self._writer.written_steps

    @property
    def failed(self) -> BaseException | None:
        """The write error that stopped this sink, if any."""
        return self._writer.failed

    def write(self, result: StepResult) -> None:
        """Buffer the step; flushed within ``flush_seconds`` (at once for a NaN/Inf)."""
        self._writer.write(result)

    def flush(self) -> None:
        """Write what is buffered now."""
        self._writer.flush()

    def close(self) -> None:
        """Flush, compact and unlock (idempotent)."""
        self._writer.close()

    def __repr__(self) -> str:
        return f"StoreSink({str(self.path)!r}, writer={self.writer!r})"
