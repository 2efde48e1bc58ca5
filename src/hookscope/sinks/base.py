"""The interface every sink implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hookscope.monitor.records import StepResult


@runtime_checkable
class Sink(Protocol):
    """Receives one `StepResult` per recorded step.

    ``write`` is called from `Monitor.step` (never from inside a hook);
    ``close`` once when the monitor closes.
    """

    def write(self, result: StepResult) -> None:
        """Store or send one step's results."""

    def close(self) -> None:
        """Flush and release resources; further writes are errors."""
