"""What the engine needs of a language front end: one narrow protocol.

The runner hands a file's bytes to the front end that claims its suffix: `Language.scan`
in the first pass, `Language.analyze` in the second. The engine imports no front end;
`hookscope.lint.languages` lists them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from hookscope.lint.engine.findings import Finding
from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.project import Scan
from hookscope.lint.engine.registry import Rule
from hookscope.lint.engine.source import Source


class Language(Protocol):
    """A front end: the files it reads, its rules, its two passes.

    Attributes:
        suffixes: the file name endings it reads.
        indexed: the endings of the project files whose definitions join the index.
        rules: its rule classes.
    """

    suffixes: tuple[str, ...]
    indexed: tuple[str, ...]
    rules: tuple[type[Rule], ...]

    def scan(self, data: bytes, where: str, path: str) -> Scan:
        """The first pass over the bytes of ``path`` (credited to ``where`` in the index)."""

    def analyze(
        self, path: str, data: bytes, index: ClassIndex, codes: frozenset[str]
    ) -> list[Finding]:
        """Unsuppressed findings of the rules ``codes`` in ``data`` (the bytes of ``path``)."""

    def decode(self, data: bytes) -> Source:
        """The text of ``data``, and how to write a fixed text back.

        Raises:
            UnicodeDecodeError, SyntaxError, LookupError: bytes that do not decode.
        """


def language_of(path: str, languages: Sequence[Language]) -> Language:
    """The front end that reads ``path`` (the first one for an unclaimed suffix)."""
    return next((lang for lang in languages if path.endswith(lang.suffixes)), languages[0])
