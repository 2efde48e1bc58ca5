"""Records the linter produces (findings and the text edits that fix them), and inline
suppression: ``# noqa``, ``# noqa: HS101``, ``# hookscope: ignore[HS101]``.

A bare ``# noqa`` or ``# hookscope: ignore`` silences every code on the line; codes
match by prefix (``# noqa: HS1`` silences HS101 and HS111). ``//`` comments work in C#.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Literal

Severity = Literal["error", "warning"]
Confidence = Literal["resolved", "guess"]


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions of a file.

    Positions are 1-based lines and 0-based character columns; ``end`` is exclusive.
    """

    line: int
    col: int
    end_line: int
    end_col: int
    replacement: str


@dataclass(frozen=True)
class Finding:
    """One problem found in one file.

    Attributes:
        path: the file, as given or discovered.
        line: 1-based line where the problem starts.
        col: 1-based column where it starts.
        end_line: 1-based line where it ends.
        end_col: 1-based column just past its end.
        code: the rule code, e.g. ``"HS101"``.
        message: what is wrong, why, and what to do.
        severity: ``"error"`` or ``"warning"``.
        fixable: whether ``--fix`` can rewrite it.
        edits: the rewrite applied by ``--fix`` (empty when not fixable).
        confidence: ``"resolved"`` when the finding rests on types the linter
            resolved, ``"guess"`` when it rests on a name-based guess. A guess is
            never fixable: its edits are dropped here, whichever rule made it.
        resolution: how the receiver's type was resolved, e.g.
            ``self.encoder = TransformerEncoder(...) at model.py:41`` (may be empty).
    """

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    code: str
    message: str
    severity: Severity
    fixable: bool = False
    edits: tuple[Edit, ...] = ()
    confidence: Confidence = "resolved"
    resolution: str = ""

    def __post_init__(self) -> None:
        if self.confidence == "guess" and (self.fixable or self.edits):
            object.__setattr__(self, "fixable", False)
            object.__setattr__(self, "edits", ())

    def to_dict(self) -> dict[str, Any]:
        """The finding as the JSON object of ``--format json``: every field but the edits."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "edits"}


def in_order(finding: Finding) -> tuple[str, int, int, str]:
    """The sort key of findings: path, line, column, code."""
    return (finding.path, finding.line, finding.col, finding.code)


_CODE_LIST = r"[A-Za-z]+[0-9]*(?:[\s,]+[A-Za-z]+[0-9]+)*"
_NOQA = re.compile(rf"(?:#|//)\s*noqa\b(?::\s*(?P<codes>{_CODE_LIST}))?", re.IGNORECASE)
_IGNORE = re.compile(r"(?:#|//)\s*hookscope:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?")


def line_codes(line: str) -> set[str] | None:
    """Codes silenced on ``line``: ``None`` for none, an empty set for all."""
    if "noqa" not in line and "hookscope" not in line:
        return None
    silenced: set[str] | None = None
    for pattern in (_NOQA, _IGNORE):
        for match in pattern.finditer(line):
            codes = match.group("codes")
            if not codes:
                return set()
            silenced = (silenced or set()) | {c.upper() for c in re.split(r"[\s,]+", codes) if c}
    return silenced


def is_suppressed(finding: Finding, lines: list[str]) -> bool:
    """Whether a comment on the finding's first or last line silences it."""
    for lineno in {finding.line, finding.end_line}:
        codes = line_codes(lines[lineno - 1]) if 0 < lineno <= len(lines) else None
        if codes is not None and (not codes or any(map(finding.code.startswith, codes))):
            return True
    return False
