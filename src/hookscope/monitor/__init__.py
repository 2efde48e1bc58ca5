"""Activation and gradient monitoring. Placeholder until the monitor issue lands."""

from __future__ import annotations

from typing import Any


class Monitor:
    """Per-layer statistics, alerts and the first non-finite value."""

    def __init__(self, model: Any, **kwargs: Any) -> None:
        raise NotImplementedError("hookscope.Monitor is not implemented yet")
