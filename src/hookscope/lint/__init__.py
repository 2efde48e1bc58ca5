"""Static checks for hook-bypassing calls. Placeholder until the lint issue lands."""

from __future__ import annotations

from typing import Any


def lint(paths: Any, **kwargs: Any) -> list[Any]:
    """Lint ``paths`` and return findings."""
    raise NotImplementedError("hookscope.lint is not implemented yet")
