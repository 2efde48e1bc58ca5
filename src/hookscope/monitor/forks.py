"""A process forked from a monitored one records nothing.

The parent goes on recording the model; what a forked child runs (a
DataLoader worker calling the model, a ``multiprocessing`` task) would
otherwise add steps to copies of the parent's monitors that nobody reads, and
hold them in memory (the sinks already refuse to write there). Every monitor
opened in this process is tracked here, and in a forked child each one is
told so (``forked()``: it pauses and stays paused).
"""

from __future__ import annotations

import os
import weakref
from typing import Protocol

__all__ = ["track"]


class Forkable(Protocol):
    """What a tracked monitor offers."""

    def forked(self) -> None: ...


#: Monitors opened in this process and not yet garbage.
_OPEN: weakref.WeakSet[Forkable] = weakref.WeakSet()


def track(monitor: Forkable) -> None:
    """Tell ``monitor`` when this process forks, in the child."""
    _OPEN.add(monitor)


def _forked_child() -> None:
    for monitor in list(_OPEN):
        monitor.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked_child)
