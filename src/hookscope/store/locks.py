"""One writer per label: an advisory lock on ``writers/<writer>.lock`` (or a JSONL file)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import IO


def try_lock(file: IO[str]) -> bool:
    """An exclusive advisory lock on ``file`` (released when the process ends); True if held.

    Where ``fcntl`` does not exist (Windows) no lock is taken.
    """
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def released(path: Path) -> bool:
    """Whether ``path`` exists and no live writer holds its lock."""
    try:
        with path.open("a", encoding="utf-8") as file:
            return try_lock(file)
    except OSError:
        return False


def wait_released(paths: list[Path], timeout: float) -> list[Path]:
    """Wait until every one of ``paths`` exists unlocked; returns those still missing or held."""
    deadline = time.monotonic() + timeout
    waiting = list(paths)
    while waiting:
        waiting = [path for path in waiting if not path.exists() or not released(path)]
        if not waiting or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return waiting
