"""Activation capture by qualified module name. Placeholder until the pictures issue lands."""

from __future__ import annotations

from typing import Any


def capture(model: Any, **kwargs: Any) -> Any:
    """Store detached activations of selected modules."""
    raise NotImplementedError("hookscope.capture is not implemented yet")
