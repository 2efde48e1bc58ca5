"""accelerate keeps process-wide singletons (the Trainer makes an Accelerator too): reset them per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _fresh_accelerate_state() -> Iterator[None]:
    try:
        from accelerate.state import AcceleratorState, GradientState
    except ImportError:
        yield
        return
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
