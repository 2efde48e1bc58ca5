"""Helpers for lint tests: fixture paths and inline expectations (``# HS101``)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from hookscope.lint import Finding, lint
from tests.lint.library_site import write_site

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lint"
_EXPECT = re.compile(r"(?:#|//)\s*((?:HS\d{3}\b[ ,]*)+)")


def expected_codes(path: Path) -> set[tuple[int, str]]:
    """``(line, code)`` for every ``# HSxxx`` comment in a fixture file."""
    out = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in _EXPECT.finditer(line):
            out.update((lineno, code) for code in re.findall(r"HS\d{3}", match.group(1)))
    return out


def write_source(root: Path, name: str, source: str) -> Path:
    """Write ``source`` (dedented) to ``root/name`` in a project rooted by a ``.git`` folder."""
    (root / ".git").mkdir(exist_ok=True)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def findings_of(root: Path, path: Path, select: Sequence[str] = ("HS1",)) -> list[Finding]:
    """The findings in ``path`` of a whole-project run over ``root``."""
    findings = lint(root, select=list(select), config=False)
    return [f for f in findings if f.path.endswith(path.name)]


def found(root: Path, path: Path, select: Sequence[str] = ("HS1",)) -> set[tuple[int, str]]:
    """``(line, code)`` of `findings_of`."""
    return {(f.line, f.code) for f in findings_of(root, path, select)}


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def _library_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_site(tmp_path_factory.mktemp("site"))


@pytest.fixture
def library_site(_library_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Small sources of the libraries that tests import (`library_site.SOURCES`), on the
    search path as an installed environment would have them."""
    monkeypatch.syspath_prepend(str(_library_folder))
    return _library_folder
