"""Helpers for lint tests: fixture paths and inline expectations (``# HS101``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lint"
_EXPECT = re.compile(r"(?:#|//)\s*((?:HS\d{3}\b[ ,]*)+)")


def expected_codes(path: Path) -> set[tuple[int, str]]:
    """``(line, code)`` for every ``# HSxxx`` comment in a fixture file."""
    out = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in _EXPECT.finditer(line):
            out.update((lineno, code) for code in re.findall(r"HS\d{3}", match.group(1)))
    return out


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
