"""The C# front end as the engine sees it: scan, analyze, decode (`Language`): type
declarations for the index and a ``.forward(`` pre-filter, then tree-sitter and `rules`.
"""

from __future__ import annotations

import re

from hookscope.lint.csharp.index import scan_csharp
from hookscope.lint.csharp.rules import RULES, CSharpRule, file_index, parse_csharp
from hookscope.lint.engine.findings import Finding, in_order, is_suppressed
from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.project import Scan
from hookscope.lint.engine.registry import Rule
from hookscope.lint.engine.source import Source

_DOT_FORWARD = re.compile(rb"\.[ \t\r\n\\]*forward\s*\(")


class CSharp:
    """The TorchSharp front end (``.cs`` files)."""

    suffixes: tuple[str, ...] = (".cs",)
    indexed: tuple[str, ...] = (".cs",)  # C# classes resolve C# receivers (HS201)
    rules: tuple[type[Rule], ...] = RULES

    def scan(self, data: bytes, where: str, path: str) -> Scan:
        """The first pass over one file: its types and the pre-filter; bytes that are not
        UTF-8 are no C# source (an HS000 finding)."""
        if not data.isascii():
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                return Scan((), False, f"cannot decode: {exc}")
        candidate = b"forward" in data and bool(_DOT_FORWARD.search(data))
        return Scan(tuple(scan_csharp(data, where)), candidate, "", len(data))

    def analyze(
        self, path: str, data: bytes, index: ClassIndex | None, codes: frozenset[str]
    ) -> list[Finding]:
        """Unsuppressed findings of the C# rules ``codes`` in ``data`` (the bytes of ``path``).

        ``index`` is the project's class index; without one, the file's own classes.
        """
        rules = [r for r in self.rules if r.code in codes and issubclass(r, CSharpRule)]
        if not rules:
            return []
        root = parse_csharp(data)
        index = index if index is not None else file_index(data)
        lines = data.decode("utf-8", "replace").split("\n")
        findings = [
            f
            for rule in sorted(rules, key=lambda r: r.code)
            for f in rule().check(path, data, root, index)
            if not is_suppressed(f, lines)
        ]
        return sorted(findings, key=in_order)

    def decode(self, data: bytes) -> Source:
        """The text of C# source bytes (UTF-8)."""
        return Source(data.decode("utf-8"))


CSHARP = CSharp()
