"""Rule base class and prefix selection.

A rule is one small class: its code, name, message and severity are class data;
``check`` yields findings and never changes the tree or the text. Fixes are
`Edit` records attached to findings; the runner applies them. Each front end lists
its rules (`Language.rules`); the engine's own rule is HS000.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, Literal

from hookscope.errors import UsageError
from hookscope.lint.engine.findings import Finding, Severity

Language = Literal["python", "csharp", "any"]


class Rule:
    """Base of every rule; subclasses set the class attributes below.

    Attributes:
        code: ``"HS"`` and three digits.
        name: a short kebab-case name (SARIF ``name``).
        message: the finding message: what is wrong, why, and what to do.
        severity: ``"error"`` or ``"warning"``.
        fixable: whether findings carry an autofix.
        language: the sources the rule reads.
        default: whether the rule runs when nothing is selected. An opt-in rule
            (``default = False``) runs only when its full code is selected.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    severity: ClassVar[Severity] = "warning"
    fixable: ClassVar[bool] = False
    language: ClassVar[Language] = "python"
    default: ClassVar[bool] = True


def select_codes(
    rules: Sequence[type[Rule]],
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
) -> frozenset[str]:
    """Codes of ``rules`` enabled by ``select`` minus ``ignore``; both match by prefix
    (``HS1`` = HS1xx).

    Opt-in rules (HS104, guessed findings) are selected only by their full code:
    ``HS1`` is HS101-HS103 and HS111-HS114, ``HS1,HS104`` adds the guesses.

    Raises:
        UsageError: a prefix that matches no rule, e.g. ``HS9``.
    """
    codes = [rule.code for rule in rules]
    defaults = {rule.code for rule in rules if rule.default}
    chosen = set(_match(select, codes, defaults)) if select else defaults
    return frozenset(chosen - set(_match(ignore or (), codes)))


def _match(
    prefixes: Iterable[str], codes: list[str], defaults: set[str] | None = None
) -> list[str]:
    """Codes matching each prefix; a prefix reaches a code outside ``defaults`` only in full."""
    by_prefix = codes if defaults is None else [c for c in codes if c in defaults]
    out: list[str] = []
    for prefix in prefixes:
        prefix = prefix.strip().upper()
        if not prefix:
            continue
        hits = [c for c in codes if c == prefix or (c.startswith(prefix) and c in by_prefix)]
        if not hits:
            raise UsageError(
                f"unknown rule code or prefix {prefix!r}; known codes: {', '.join(codes)}"
            )
        out.extend(hits)
    return out


class UnreadableFileRule(Rule):
    """HS000: a file that cannot be read or parsed; the scan goes on."""

    code = "HS000"
    name = "unreadable-file"
    message = (
        "cannot lint this file: {reason}. Fix the error (or exclude the file) to have it checked."
    )
    severity = "error"
    language = "any"


def unreadable(path: str, reason: str, codes: frozenset[str], line: int = 1) -> list[Finding]:
    """The HS000 finding of a file that cannot be read (none when HS000 is not selected)."""
    if UnreadableFileRule.code not in codes:
        return []
    rule = UnreadableFileRule
    message = rule.message.format(reason=reason)
    return [Finding(path, line, 1, line, 1, rule.code, message, rule.severity)]
