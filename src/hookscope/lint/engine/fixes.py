"""Apply the edits attached to findings, check the result, and show diffs."""

from __future__ import annotations

import ast
import os
import shutil
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass

from hookscope.lint.engine.findings import Edit, Finding
from hookscope.lint.engine.source import Source


@dataclass(frozen=True)
class FileFix:
    """The fixed text of one file.

    Attributes:
        path: the file.
        original: its text before.
        fixed: its text after applying every non-overlapping edit.
        applied: how many findings were fixed.
        source: its encoding, byte-order mark and line endings, kept by `data`.
        error: why the file could not be fixed (it is then left as it is).
    """

    path: str
    original: str
    fixed: str
    applied: int
    source: Source = Source("")
    error: str = ""

    def data(self) -> bytes:
        """The fixed file's bytes, in its own encoding and line endings."""
        return self.source.encode(self.fixed)

    def diff(self) -> str:
        """A unified diff from ``original`` to ``fixed``."""
        import difflib  # here: a lint run that shows no diff never needs it

        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.fixed.splitlines(keepends=True),
                fromfile=f"a/{self.path.lstrip('/')}",
                tofile=f"b/{self.path.lstrip('/')}",
            )
        )


def apply_edits(text: str, findings: Iterable[Finding]) -> tuple[str, int]:
    """Apply the edits of ``findings`` to ``text``; overlapping ones are left for a next round.

    Returns:
        The new text and the number of findings whose edits were applied.
    """
    # Only "\n" ends a line here, as for the parser (str.splitlines also splits on \x0c).
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    chosen: list[tuple[int, int, str]] = []
    applied = 0
    for finding in sorted(findings, key=lambda f: (f.line, f.col)):
        spans = [
            (offset(e.line, e.col), offset(e.end_line, e.end_col), e.replacement)
            for e in finding.edits
        ]
        if not spans or any(_overlaps(s, chosen) for s in spans):
            continue
        chosen.extend(spans)
        applied += 1
    for start, end, replacement in sorted(chosen, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, applied


def _overlaps(span: tuple[int, int, str], chosen: list[tuple[int, int, str]]) -> bool:
    start, end, _ = span
    return any(start < c_end and c_start < end or start == c_start for c_start, c_end, _ in chosen)


def reparses(path: str, text: str) -> bool:
    """Whether a fixed Python file still parses (C# files are not checked here)."""
    if not path.endswith(".py"):
        return True
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def write_fix(file_fix: FileFix) -> str:
    """Write one fixed file atomically (never half-written, never a link replaced).

    A symbolic link is followed: the fix lands in the file it points to, written to a
    temporary file next to that file and renamed over it, so the link stays a link.

    Returns:
        The path of the file written (the link's target for a link).

    Raises:
        OSError: the file could not be written (it is left as it was).
        UnicodeEncodeError: the fixed text does not fit the file's encoding.
    """
    target = os.path.realpath(file_fix.path)
    tmp = f"{target}.hookscope-fix.tmp"
    try:
        with open(tmp, "wb") as handle:
            handle.write(file_fix.data())
        shutil.copymode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def edit_count(findings: Iterable[Finding]) -> int:
    """How many findings carry edits."""
    return sum(1 for f in findings if f.edits)


__all__ = ["Edit", "FileFix", "apply_edits", "edit_count", "reparses", "write_fix"]
