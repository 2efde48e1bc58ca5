"""Runtime detection of ``module.forward(x)`` calls that skip the module's hooks.

Placeholder: implemented under the doctor issue.
"""

from __future__ import annotations

from typing import Any


class BypassDetector:
    """Watches selected modules for ``forward`` calls that bypass ``__call__``."""

    def __init__(self, session: Any, *, policy: str) -> None:
        self.session = session
        self.policy = policy
        self.records: list[Any] = []

    def attach(self, modules: Any) -> None:
        """Start watching ``modules`` of the session's model."""
        raise NotImplementedError("bypass detection is not implemented yet")

    def detach(self) -> None:
        """Stop watching; leave no trace on any module."""
