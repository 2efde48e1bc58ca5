"""What a Python rule receives: the parsed file, the resolver, and a finding factory."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from hookscope.lint.engine.findings import Confidence, Edit, Finding
from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.registry import Rule
from hookscope.lint.python.parse.pyfile import PyFile, Scope
from hookscope.lint.python.resolution.resolver import Resolver


class WholeFileNeeded(Exception):
    """Raised by `Analysis.unsure` on a masked parse; the runner parses the whole file
    (control flow inside a run, never seen by a caller of the lint)."""


@dataclass(eq=False)
class Analysis:
    """One Python file, ready for the rules."""

    file: PyFile
    resolver: Resolver
    cache: dict[str, object] = field(default_factory=dict)
    partial: bool = False
    needs_full: bool = False

    @classmethod
    def of(cls, pyfile: PyFile, index: ClassIndex, *, partial: bool = False) -> Analysis:
        """Analysis of ``pyfile`` against the project-wide ``index``; ``partial``: the tree
        was parsed from a masked text (see `regions`)."""
        resolver = Resolver(pyfile, index)
        resolver.complete = not partial
        return cls(pyfile, resolver, partial=partial)

    def unsure(self) -> None:
        """A rule needed facts a masked parse may lack: the whole file must be parsed.

        Raises:
            WholeFileNeeded: on a masked parse, so that the rules stop there.
        """
        if self.partial:
            self.needs_full = True
            raise WholeFileNeeded

    def finding(
        self,
        rule: type[Rule],
        node: ast.AST,
        *,
        edits: tuple[Edit, ...] = (),
        confidence: Confidence = "resolved",
        resolution: str = "",
        **fields: str,
    ) -> Finding:
        """A finding of ``rule`` spanning ``node``; ``fields`` fill the message template."""
        line, col, end_line, end_col = self.file.span(node)
        return Finding(
            path=self.file.path,
            line=line,
            col=col + 1,
            end_line=end_line,
            end_col=end_col + 1,
            code=rule.code,
            message=rule.message.format(**fields),
            severity=rule.severity,
            fixable=bool(edits),
            edits=edits,
            confidence=confidence,
            resolution=resolution,
        )

    def source(self, node: ast.AST, limit: int = 40) -> str:
        """The source text of ``node``, shortened to ``limit`` characters for messages."""
        text = " ".join(self.file.segment(*self.file.span(node)).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."


class PythonRule(Rule):
    """A rule over Python files."""

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        """Yield the findings of this rule in one file."""
        raise NotImplementedError


def self_names(scope: Scope) -> set[str]:
    """Names of ``self`` in this scope and the scopes around it."""
    names = set()
    current: Scope | None = scope
    while current is not None:
        if current.self_name:
            names.add(current.self_name)
        current = current.parent
    return names


def attribute_name_edit(pyfile: PyFile, func: ast.expr, new_name: str) -> tuple[Edit, ...]:
    """Rename the last identifier of ``func`` (``x.register_backward_hook`` or a name)."""
    _, _, end_line, end_col = pyfile.span(func)
    old = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if not old or pyfile.lines[end_line - 1][end_col - len(old) : end_col] != old:
        return ()
    return (Edit(end_line, end_col - len(old), end_line, end_col, new_name),)
