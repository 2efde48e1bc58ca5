"""Inline suppression: ``# noqa``, ``# noqa: HS101``, ``# hookscope: ignore[HS101]``.

A bare ``# noqa`` or ``# hookscope: ignore`` silences every code on the line; codes
match by prefix (``# noqa: HS1`` silences HS101 and HS111). ``//`` comments work in C#.
"""

from __future__ import annotations

import re

from hookscope.lint.engine.findings import Finding

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
        if not 0 < lineno <= len(lines):
            continue
        codes = line_codes(lines[lineno - 1])
        if codes is None:
            continue
        if not codes or any(finding.code.startswith(code) for code in codes):
            return True
    return False
