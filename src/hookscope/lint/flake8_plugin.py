"""flake8 entry point: ``HS = hookscope.lint.flake8_plugin:HookscopeFlake8``.

flake8 hands plugins one file at a time, so the class index holds that file's
classes only (plus the ``torch.nn`` classes): hierarchies that cross files are
resolved by the heuristic. ``hookscope lint`` sees the whole tree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from hookscope import __version__
from hookscope.lint.analysis import Analysis, PythonRule
from hookscope.lint.index import merge, scan_classes
from hookscope.lint.pyfile import PyFile
from hookscope.lint.registry import all_rules
from hookscope.lint.suppress import is_suppressed


class HookscopeFlake8:
    """flake8 AST plugin running every hookscope Python rule (codes ``HS1xx``)."""

    name = "hookscope"
    version = __version__

    def __init__(
        self, tree: ast.Module, filename: str = "stdin", lines: list[str] | None = None
    ) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines or []

    def run(self) -> Iterator[tuple[int, int, str, type[Any]]]:
        """Yield ``(line, col, "HSxxx message", type)`` as flake8 expects (col 0-based)."""
        text = "".join(self.lines)
        if "forward" not in text and "_hook" not in text:
            return
        pyfile = PyFile.from_tree(self.filename, text, self.tree)
        analysis = Analysis.of(pyfile, merge(scan_classes(text.encode("utf-8", "replace"))))
        for rule in all_rules():
            if issubclass(rule, PythonRule):
                for finding in rule().check(analysis):
                    if is_suppressed(finding, pyfile.lines):  # also "# hookscope: ignore[...]"
                        continue
                    yield (
                        finding.line,
                        finding.col - 1,
                        f"{finding.code} {finding.message}",
                        type(self),
                    )
