"""TensorBoard sink: scalars through ``torch.utils.tensorboard.SummaryWriter``.

Tags are ``PHASE/MODULE/TENSOR/STAT`` (``forward/features.0/output/mean``);
alerts are written as text under ``alerts``. Non-finite values are written
as they are (TensorBoard shows NaN/Inf). Events are flushed every step.

Under torch.distributed with several ranks each rank writes under its own
``LOG_DIR/rank<N>/`` (`hookscope.dist.rank_dir`), so TensorBoard shows one
run per rank instead of two ranks' points under one tag. A process forked
after the sink opened writes nothing and never touches the writer's
background thread (which does not exist in the child: using it would hang).
"""

from __future__ import annotations

import os
from typing import Any

from hookscope import dist
from hookscope.errors import UsageError, require_extra
from hookscope.monitor.records import StepResult


class TensorBoardSink:
    """Write each recorded step as TensorBoard scalars under ``log_dir``.

    Args:
        log_dir: directory for the event files (created).

    Raises:
        MissingExtraError: tensorboard is not installed (``hookscope[tensorboard]``).
    """

    def __init__(self, log_dir: str | os.PathLike[str]) -> None:
        require_extra("tensorboard", "tensorboard")
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = dist.rank_dir(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._writer: Any = SummaryWriter(log_dir=str(self.log_dir))
        self._pid = os.getpid()

    def write(self, result: StepResult) -> None:
        """Add every record as a scalar at ``result.step`` and flush."""
        if self._writer is None:
            raise UsageError(f"TensorBoardSink({self.log_dir}) is closed")
        if os.getpid() != self._pid:
            return
        writer = self._writer
        for rec in result.records:
            tag = f"{rec.phase}/{rec.module or '<root>'}/{rec.tensor}/{rec.stat}"
            writer.add_scalar(tag, rec.value, result.step)
        if result.alerts:
            lines = [
                f"{a.rule}: {a.phase} {a.module} {a.tensor} = {a.value:g}" for a in result.alerts
            ]
            writer.add_text("alerts", "\n\n".join(lines), result.step)
        writer.flush()

    def close(self) -> None:
        """Flush and close the event file (idempotent)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            if os.getpid() == self._pid:
                writer.close()
