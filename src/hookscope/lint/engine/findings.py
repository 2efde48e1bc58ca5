"""Records the linter produces: findings and the text edits that fix them."""

from __future__ import annotations

from dataclasses import dataclass
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
        """The finding as the JSON object of ``--format json``."""
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "code": self.code,
            "message": self.message,
            "severity": self.severity,
            "fixable": self.fixable,
            "confidence": self.confidence,
            "resolution": self.resolution,
        }


def in_order(finding: Finding) -> tuple[str, int, int, str]:
    """The sort key of findings: path, line, column, code."""
    return (finding.path, finding.line, finding.col, finding.code)
