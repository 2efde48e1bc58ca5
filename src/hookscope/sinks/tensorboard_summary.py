"""A light TensorBoard sink: a handful of events per step, not one per record.

What a long run needs on a dashboard, per recorded step:

* scalars ``hookscope/grad_norm`` (total L2 norm of the parameter gradients),
  ``hookscope/activation_absmax`` (largest ``absmax`` over the layers),
  ``hookscope/alerts`` (alerts at the step) and ``hookscope/nonfinite``
  (NaN + Inf values counted at the step);
* per-layer summaries as one histogram each across the layers:
  ``layers/forward_absmax``, ``layers/forward_std``, ``layers/param_grad_norm``
  (how the layers spread, and outliers, in one picture);
* text: ``alerts`` (each alert with its phase) and ``first_nonfinite`` (once).

Every statistic of every layer is in the run store (`hookscope.store`); this
sink is the at-a-glance view. Events are written synchronously to one file
(no background thread), flushed at most once a second and whenever a step has
alerts or a NaN/Inf: a write error (disk full) warns once and disables the
sink, without a thread traceback. Under torch.distributed each rank writes
under ``LOG_DIR/rank<N>/``; a forked child writes nothing.
"""

from __future__ import annotations

import math
import os
import socket
import time
import warnings
from typing import IO, Any

from hookscope import dist
from hookscope.errors import HookscopeWarning, UsageError, require_extra
from hookscope.monitor.records import StepResult

_HIST = {
    ("forward", "absmax"): "layers/forward_absmax",
    ("forward", "std"): "layers/forward_std",
    ("param", "norm"): "layers/param_grad_norm",
}


class TensorBoardSummarySink:
    """Write a small per-step summary of each result as TensorBoard events under ``log_dir``.

    Args:
        log_dir: folder of the event file (created).
        flush_seconds: longest time events wait in the file buffer.

    Raises:
        MissingExtraError: tensorboard is not installed (``hookscope[tensorboard]``).
    """

    def __init__(self, log_dir: str | os.PathLike[str], *, flush_seconds: float = 1.0) -> None:
        require_extra("tensorboard", "tensorboard")
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.record_writer import RecordWriter
        from torch.utils.tensorboard import summary

        self._event, self._summary, self._proto = Event, summary, Summary
        self.log_dir = dist.rank_dir(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        name = f"events.out.tfevents.{time.time():.6f}.{socket.gethostname()}.{os.getpid()}.hs"
        self.path = self.log_dir / name
        self._file: IO[bytes] | None = self.path.open("wb")
        self._records = RecordWriter(self._file)
        self._pid = os.getpid()
        self.flush_seconds = flush_seconds
        self._last_flush = time.monotonic()
        self._nonfinite_written = False
        self.failed: BaseException | None = None
        self._emit(Event(wall_time=time.time(), step=0, file_version="brain.Event:2"))

    def _emit(self, event: Any) -> None:
        self._records.write(event.SerializeToString())

    def _add(self, step: int, *values: Any) -> None:
        summary = self._proto(value=[v for s in values for v in s.value])
        self._emit(self._event(wall_time=time.time(), step=step, summary=summary))

    def write(self, result: StepResult) -> None:
        """Add the step's summary events; flush when due (at once for alerts or a NaN/Inf)."""
        if self._file is None:
            raise UsageError(f"TensorBoardSummarySink({self.log_dir}) is closed")
        if os.getpid() != self._pid or self.failed is not None:
            return
        try:
            urgent = self._write(result)
            if urgent or time.monotonic() - self._last_flush >= self.flush_seconds:
                self._records.flush()
                self._last_flush = time.monotonic()
        except OSError as exc:
            self._fail(exc)

    def _write(self, result: StepResult) -> bool:
        summary, step = self._summary, result.step
        grads: list[float] = []
        layers: dict[str, list[float]] = {tag: [] for tag in _HIST.values()}
        nonfinite = 0.0
        for (phase, _module, _tensor), values in result.groups():
            for stat, value in values.items():
                tag = _HIST.get((phase, stat))
                if tag is not None and math.isfinite(value):
                    layers[tag].append(value)
                if stat in ("nan_count", "inf_count"):
                    nonfinite += value
            if phase == "param" and "norm" in values:
                grads.append(values["norm"])
        scalars = [
            summary.scalar("hookscope/alerts", float(len(result.alerts))),
            summary.scalar("hookscope/nonfinite", nonfinite),
        ]
        if grads:
            total = math.sqrt(math.fsum(g * g for g in grads))
            scalars.append(summary.scalar("hookscope/grad_norm", total))
        if layers["layers/forward_absmax"]:
            absmax = max(layers["layers/forward_absmax"])
            scalars.append(summary.scalar("hookscope/activation_absmax", absmax))
        hists = [
            summary.histogram(tag, _array(values), "auto")
            for tag, values in layers.items()
            if values
        ]
        self._add(step, *scalars, *hists)
        if result.alerts:
            lines = [
                f"{a.rule}: {a.phase} {a.module or '(root)'} {a.tensor} = {a.value:g}"
                for a in result.alerts
            ]
            self._add(step, summary.text("alerts", "\n\n".join(lines)))
        first = result.first_nonfinite
        if first is not None and not self._nonfinite_written:
            text = f"step {first.step}: {first.phase} {first.module or '(root)'} {first.tensor} (rank {first.rank})"
            self._add(step, summary.text("first_nonfinite", text))
            self._nonfinite_written = True
        return bool(result.alerts) or nonfinite > 0

    def _fail(self, exc: OSError) -> None:
        self.failed = exc
        warnings.warn(
            f"TensorBoard log {self.log_dir}: cannot write ({exc.strerror or type(exc).__name__}); "
            "no more events are written, training goes on",
            HookscopeWarning,
            stacklevel=3,
        )

    def close(self) -> None:
        """Flush and close the event file (idempotent)."""
        file, self._file = self._file, None
        if file is None or os.getpid() != self._pid:
            return
        try:
            if self.failed is None:
                self._records.flush()
            file.close()
        except OSError as exc:
            if self.failed is None:
                self._fail(exc)


def _array(values: list[float]) -> Any:
    import numpy as np

    return np.asarray(values, dtype=np.float64)
