"""The Python front end as the engine sees it: scan, analyze, decode (`Language`).

The first pass reads bytes only (classes, top-level functions, look-alike methods and
from-import lists for the index; ``.forward(`` or ``register_..._hook`` makes a
candidate); the second parses and runs the rules (`analyze_text`).
"""

from __future__ import annotations

import ast
import contextlib
import gc
import re
from collections.abc import Iterator

from hookscope.lint.engine.findings import Finding, in_order, is_suppressed
from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.project import Scan
from hookscope.lint.engine.registry import Rule, unreadable
from hookscope.lint.engine.source import Source
from hookscope.lint.python.index.classes import scan_definitions, scan_lookalikes
from hookscope.lint.python.index.importlists import import_lists
from hookscope.lint.python.parse.decode import decode_python
from hookscope.lint.python.parse.pyfile import PyFile, mention_lines
from hookscope.lint.python.parse.regions import mask
from hookscope.lint.python.rules import forward, hooks, self_forward
from hookscope.lint.python.rules.analysis import Analysis, PythonRule, WholeFileNeeded

_DOT_FORWARD = re.compile(rb"\.[ \t\r\n\\]*forward\s*\(")
_HOOK = re.compile(rb"register_\w+_hook\s*\(")
_BLANK = b" \t\r\n\\"


class Python:
    """The Python front end (``.py`` and ``.pyi`` files; ``.py`` files join the index)."""

    suffixes: tuple[str, ...] = (".py", ".pyi")
    indexed: tuple[str, ...] = (".py",)
    rules: tuple[type[Rule], ...] = (*forward.RULES, *self_forward.RULES, *hooks.RULES)

    def scan(self, data: bytes, where: str, path: str) -> Scan:
        """The first pass over one file: its definitions and the pre-filter; bytes that
        the interpreter could not decode are no Python source (an HS000 finding)."""
        if not data.isascii():
            try:
                decode_python(data)
            except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
                return Scan((), False, f"cannot decode: {exc}")
        first = data.find(b"forward")
        # Every _HOOK match holds "register_": a longer word is found (or ruled out) faster.
        candidate = (first >= 0 and calls_forward(data, first)) or (
            b"register_" in data and _registers_hook(data)
        )
        classes, functions = scan_definitions(data, where)
        # Look-alikes define "def forward": no "forward" at all, none (one pass over the bytes less).
        lookalikes = scan_lookalikes(data, first) if first >= 0 else ()
        # (a script's without definitions too: its module-level calls are callers, see
        # `importers.importers`; not a bare package ``__init__``'s, often long re-export lists)
        script = not path.endswith("__init__.py")
        imports = import_lists(data, where) if classes or functions or script else None
        return Scan(tuple(classes), candidate, "", len(data), tuple(functions), lookalikes, imports)

    def analyze(
        self, path: str, data: bytes, index: ClassIndex, codes: frozenset[str]
    ) -> list[Finding]:
        """Unsuppressed findings of the Python rules ``codes`` in the bytes of ``path``."""
        try:
            source = decode_python(data)
        except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
            return unreadable(path, f"cannot decode: {exc}", codes)
        return analyze_text(path, source.text, index, codes)

    def decode(self, data: bytes) -> Source:
        """The text of Python source bytes, decoded as the interpreter does."""
        return decode_python(data)


PYTHON = Python()


def calls_forward(data: bytes, first: int = 0) -> bool:
    """A ``.forward(`` call other than ``super().forward(`` (which no rule flags); the search
    starts at the last ``.`` before ``first``, the first ``forward`` of ``data`` if known."""
    # _DOT_FORWARD finds exactly the "forward(" whose previous non-blank byte is ".",
    # so the Python loop below runs over method calls only, not every "forward(".
    for match in _DOT_FORWARD.finditer(data, max(0, data.rfind(b".", 0, first))):
        i = match.start() - 1
        while i >= 0 and data[i] in _BLANK:
            i -= 1
        if data[max(0, i - 6) : i + 1] != b"super()":
            return True
    return False


def _registers_hook(data: bytes) -> bool:
    """A ``register_..._hook(`` call (not its ``def``)."""
    return any(data[max(0, m.start() - 4) : m.start()] != b"def " for m in _HOOK.finditer(data))


def analyze_text(path: str, text: str, index: ClassIndex, codes: frozenset[str]) -> list[Finding]:
    """Findings of the Python rules ``codes`` in ``text`` (the contents of ``path``): the
    masked text first (`regions`), the whole file when that fails or a rule was unsure."""
    lines, mentions = text.split("\n"), mention_lines(text)  # for the mask and the walker
    masked = mask(text, lines, mentions)
    if masked is not None:
        try:
            tree = ast.parse(masked, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None  # parsed again in full below, which reports the error
        if tree is not None:
            pyfile = PyFile.from_tree(path, text, tree, lines=lines, mentions=mentions)
            with _frozen_heap():
                analysis = Analysis.of(pyfile, index, partial=True)
                findings = check(analysis, codes)
            if not analysis.needs_full and not analysis.resolver.missed:
                return findings
    try:
        pyfile = PyFile.parse(path, text, lines=lines, mentions=mentions)
    except (RecursionError, MemoryError):
        return unreadable(path, "too deeply nested to parse (RecursionError)", codes)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return unreadable(
            path,
            f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{where}",
            codes,
            getattr(exc, "lineno", 1) or 1,
        )
    with _frozen_heap():
        return check(Analysis.of(pyfile, index), codes)


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """Leave the objects alive so far (above all the file's syntax tree) out of the
    garbage collector's scans while the file is analysed: every full collection would
    walk the whole tree again, a cost that grows with the square of the file's size."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def check(analysis: Analysis, codes: frozenset[str]) -> list[Finding]:
    """The findings of the rules ``codes``; none when a masked analysis turned out to
    need the whole file (``analysis.needs_full``)."""
    findings: list[Finding] = []
    try:
        for rule in sorted(PYTHON.rules, key=lambda r: r.code):
            if rule.code in codes and issubclass(rule, PythonRule):
                found = rule().check(analysis)
                findings.extend(f for f in found if not is_suppressed(f, analysis.file.lines))
    except WholeFileNeeded:
        return []
    return sorted(findings, key=in_order)
