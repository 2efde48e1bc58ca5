"""Render findings as text, JSON, SARIF 2.1.0 or GitHub Actions annotations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from hookscope.errors import UsageError
from hookscope.lint.engine.findings import Finding
from hookscope.lint.engine.registry import Rule

Format = Literal["text", "json", "sarif", "github"]
FORMATS: tuple[Format, ...] = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(findings: Sequence[Finding], fmt: str, rules: Sequence[type[Rule]]) -> str:
    """``findings`` in the output format ``fmt`` (one of `FORMATS`); SARIF describes ``rules``.

    Raises:
        UsageError: an unknown format.
    """
    if fmt == "text":
        return to_text(findings)
    import json  # here: the default text output never needs it

    if fmt == "json":
        return json.dumps([f.to_dict() for f in findings], indent=2)
    if fmt == "sarif":
        return json.dumps(to_sarif(findings, rules), indent=2)
    if fmt == "github":
        return to_github(findings)
    raise UsageError(f"unknown output format {fmt!r}; choose from {', '.join(FORMATS)}")


def to_text(findings: Sequence[Finding]) -> str:
    """One ``path:line:col: CODE message`` line per finding.

    ``[*]`` marks fixable findings and ``(guess)`` the ones resting on a name-based
    guess. Control characters in paths and messages are escaped (``\\n``), so a
    crafted file name cannot start a line of its own in a CI log.
    """
    return "\n".join(
        f"{to_text_path(f.path)}:{f.line}:{f.col}: {f.code} {'[*] ' if f.fixable else ''}"
        f"{'(guess) ' if f.confidence == 'guess' else ''}{_printable(f.message)}"
        for f in findings
    )


def to_text_path(path: str) -> str:
    """A path safe to print on one line: control characters escaped."""
    return _printable(path)


def _printable(text: str) -> str:
    """``text`` with control characters (newlines, ESC, ...) written as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def to_github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands (``::error file=...::message``)."""
    lines = []
    for f in findings:
        level = "error" if f.severity == "error" else "warning"
        props = f"file={_gh(f.path)},line={f.line},col={f.col},endLine={f.end_line},endColumn={f.end_col},title={f.code}"
        lines.append(f"::{level} {props}::{_gh_message(f.code + ' ' + f.message)}")
    return "\n".join(lines)


def _gh(value: str) -> str:
    return _gh_message(value).replace(":", "%3A").replace(",", "%2C")


def _gh_message(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def rule_description(rule: type[Rule]) -> str:
    """The one-line summary of a rule (its docstring without the code prefix)."""
    doc = (rule.__doc__ or rule.name).strip().splitlines()[0]
    return doc.split(": ", 1)[-1]


def to_sarif(findings: Sequence[Finding], rules: Sequence[type[Rule]]) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run, the metadata of ``rules`` (every rule of the run's
    languages, sorted by code) and one result per finding."""
    from hookscope import __version__

    rule_index = {rule.code: i for i, rule in enumerate(rules)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "hookscope",
                        "version": __version__,
                        "rules": [_sarif_rule(rule) for rule in rules],
                    }
                },
                "results": [_sarif_result(f, rule_index[f.code]) for f in findings],
            }
        ],
    }


def _sarif_rule(rule: type[Rule]) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule_description(rule)},
        "fullDescription": {"text": rule.message.replace("{", "").replace("}", "")},
        "defaultConfiguration": {"level": rule.severity},
        "properties": {"fixable": rule.fixable, "language": rule.language},
    }


def _sarif_result(finding: Finding, index: int) -> dict[str, Any]:
    return {
        "ruleId": finding.code,
        "ruleIndex": index,
        "level": finding.severity,
        "message": {"text": finding.message},
        "properties": {"confidence": finding.confidence, "resolution": finding.resolution},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": finding.path.replace("\\", "/")},
                    "region": {
                        "startLine": finding.line,
                        "startColumn": finding.col,
                        "endLine": finding.end_line,
                        "endColumn": finding.end_col,
                    },
                }
            }
        ],
    }
