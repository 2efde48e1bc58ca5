"""Fixtures choosing how tensors are reduced: the native kernel or eager PyTorch ops."""

from __future__ import annotations

import pytest

from hookscope.stats import native


def _without_native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_state", {"reason": "turned off for this test"})


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reduce with eager PyTorch ops only (the kernel reports itself unavailable)."""
    _without_native(monkeypatch)


@pytest.fixture(params=["native", "eager"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once through the native kernel and once through eager ops."""
    if request.param == "eager":
        _without_native(monkeypatch)
    elif not native.available():
        pytest.skip(f"native kernel unavailable: {native.why_unavailable()}")
    return str(request.param)
