"""The project-wide class index: class name → base-class expressions.

Built from a regular expression over raw bytes, not from parsing, so that every
file of a large tree can contribute for a few milliseconds each; only files that
pass the pre-filter are parsed. Bases are kept as written (``nn.Module``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# No "^" anchor: a literal-prefixed pattern is ten times faster; the line start is checked by hand.
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_SUBSCRIPT = re.compile(r"\[[^\]]*\]")

ClassIndex = Mapping[str, tuple[tuple[str, ...], ...]]


def scan_classes(data: bytes) -> list[tuple[str, tuple[str, ...]]]:
    """``(name, bases)`` of every ``class`` statement in the source ``data``."""
    if b"class" not in data:
        return []
    out = []
    for match in _CLASS.finditer(data):
        start = match.start()
        if data[data.rfind(b"\n", 0, start) + 1 : start].strip(b" \t"):
            continue  # "class" not at the start of a line
        name = match.group(1).decode("ascii", errors="replace")
        raw = (match.group(2) or b"").decode("utf-8", errors="replace")
        out.append((name, _bases(raw)))
    return out


def _bases(raw: str) -> tuple[str, ...]:
    raw = _SUBSCRIPT.sub("", raw)
    bases = []
    for part in raw.split(","):
        part = part.split("#", 1)[0].strip()
        if part and "=" not in part:
            bases.append(part)
    return tuple(bases)


def merge(entries: Iterable[tuple[str, tuple[str, ...]]]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Group ``(name, bases)`` pairs by name; distinct base lists are kept apart."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for name, bases in entries:
        known = index.setdefault(name, [])
        if bases not in known:
            known.append(bases)
    return {name: tuple(variants) for name, variants in index.items()}
