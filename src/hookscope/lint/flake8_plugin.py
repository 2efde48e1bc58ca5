"""flake8 entry point: ``HS = hookscope.lint.flake8_plugin:HookscopeFlake8``.

flake8 hands plugins one file at a time; the plugin resolves it against the same
cached project index as ``hookscope lint`` (see `hookscope.lint.engine.project`), so
flake8 reports what ``hookscope lint`` reports for that file. It runs the default
rules: the opt-in HS104 (guesses) is only available through ``hookscope lint``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hookscope import __version__
from hookscope.errors import LintError
from hookscope.lint.engine.config import find_pyproject, load_config
from hookscope.lint.engine.index import ClassIndex, merge
from hookscope.lint.engine.project import find_root
from hookscope.lint.engine.runner import project_index
from hookscope.lint.languages import LANGUAGES, select_codes
from hookscope.lint.python.frontend import check
from hookscope.lint.python.index.classes import scan_classes, scan_lookalikes
from hookscope.lint.python.parse.pyfile import PyFile
from hookscope.lint.python.rules.analysis import Analysis


class HookscopeFlake8:
    """flake8 AST plugin running every default hookscope Python rule (codes ``HS1xx``)."""

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
        analysis = Analysis.of(pyfile, self._index(text))
        for finding in check(analysis, select_codes()):  # unsuppressed, "# hookscope: ignore" too
            yield (finding.line, finding.col - 1, f"{finding.code} {finding.message}", type(self))

    def _index(self, text: str) -> ClassIndex:
        if self.filename in ("stdin", "-") or not Path(self.filename).is_file():
            data = text.encode("utf-8", "replace")
            return merge(scan_classes(data), (), scan_lookalikes(data))
        path = str(Path(self.filename).resolve())
        root = find_root(path)
        return _project_index(str(root) if root else path)


@functools.lru_cache(maxsize=8)
def _project_index(path: str) -> ClassIndex:
    # One flake8 process checks many files of one project: its index is loaded once
    # per process (from the on-disk cache), not once per file.
    try:
        exclude = load_config(find_pyproject(Path(path))).exclude or ()
    except LintError:
        exclude = ()
    return project_index(path, LANGUAGES, exclude)
