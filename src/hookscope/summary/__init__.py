"""Parameters, shapes and MACs. Placeholder until the summary issue lands."""

from __future__ import annotations

from typing import Any

from torch import nn


class ModelSummary:
    """Result of `summary`."""


def summary(model: nn.Module, *inputs: Any, **kwargs: Any) -> ModelSummary:
    """Summarise ``model``: per-module rows, exact parameter totals, MACs."""
    raise NotImplementedError("hookscope.summary is not implemented yet")
