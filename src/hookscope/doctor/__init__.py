"""Explains hooks that did not fire. Placeholder until the doctor issue lands."""

from __future__ import annotations

from typing import Any

from torch import nn


def doctor(model: nn.Module, *inputs: Any, backward: bool = False, **kwargs: Any) -> Any:
    """Run ``model`` once and explain every hook that did not fire."""
    raise NotImplementedError("hookscope.doctor is not implemented yet")
