"""Fixtures choosing how tensors are reduced: the native kernel or eager PyTorch ops."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hookscope.stats import native


@pytest.fixture
def eager() -> Iterator[None]:
    """Reduce with eager PyTorch ops only (the kernel turned off for the test)."""
    native.set_enabled(False)
    try:
        yield
    finally:
        native.set_enabled(True)


@pytest.fixture(params=["native", "eager"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once through the native kernel and once through eager ops."""
    if request.param == "native" and not native.available():
        pytest.skip(f"native kernel unavailable: {native.why_unavailable()}")
    native.set_enabled(request.param == "native")
    try:
        yield str(request.param)
    finally:
        native.set_enabled(True)
