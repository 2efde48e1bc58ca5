"""The project-wide class index: class name → base classes and annotated attributes.

Built from regular expressions over raw bytes, not from parsing, so that every
file of a large tree can contribute for a few milliseconds each; only files that
pass the pre-filter are parsed. Bases are kept as written (``nn.Module``);
``self.x: T = ...`` annotations are credited to the nearest ``class`` line above.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# No "^" anchor: a literal-prefixed pattern is ten times faster; the line start is checked by hand.
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_SELF_ANNOTATION = re.compile(rb"self\.(\w+)[ \t]*:[ \t]*([^=\n]+?)[ \t]*=")
_SUBSCRIPT = re.compile(r"\[[^\]]*\]")

# (name, bases, annotated attributes, "path:line")
ClassEntry = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str]


@dataclass(frozen=True)
class ClassIndex:
    """Classes of the scanned tree by name (a name may have several definitions).

    Attributes:
        bases: name → one tuple of base-class expressions per distinct definition.
        attrs: name → ``{attribute: annotation source}`` from ``self.x: T = ...``.
        where: name → ``path:line`` of its first definition, for messages.
    """

    bases: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    attrs: dict[str, dict[str, str]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.bases

    def get(self, name: str) -> tuple[tuple[str, ...], ...] | None:
        """The base lists of the classes called ``name``."""
        return self.bases.get(name)


def scan_classes(data: bytes, path: str = "") -> list[ClassEntry]:
    """``(name, bases, annotated attributes, where)`` of every ``class`` statement in ``data``."""
    if b"class" not in data:
        return []
    starts: list[int] = []
    entries: list[tuple[str, tuple[str, ...], list[tuple[str, str]], str]] = []
    line, counted = 1, 0
    for match in _CLASS.finditer(data):
        start = match.start()
        if data[data.rfind(b"\n", 0, start) + 1 : start].strip(b" \t"):
            continue  # "class" not at the start of a line
        name = match.group(1).decode("ascii", errors="replace")
        raw = (match.group(2) or b"").decode("utf-8", errors="replace")
        line, counted = line + data.count(b"\n", counted, start), start
        starts.append(start)
        entries.append((name, _bases(raw), [], f"{path}:{line}"))
    if entries and b"self." in data:
        # Annotations above the first class have no owner; no match spans a line, and
        # only indentation precedes starts[0] on its line, so starting there is exact.
        for match in _SELF_ANNOTATION.finditer(data, starts[0]):
            owner = bisect.bisect_right(starts, match.start()) - 1
            attr = match.group(1).decode("ascii", errors="replace")
            entries[owner][2].append((attr, match.group(2).decode("utf-8", errors="replace")))
    return [(name, bases, tuple(attrs), where) for name, bases, attrs, where in entries]


def _bases(raw: str) -> tuple[str, ...]:
    raw = _SUBSCRIPT.sub("", raw)
    bases = []
    for part in raw.split(","):
        part = part.split("#", 1)[0].strip()
        if part and "=" not in part:
            bases.append(part)
    return tuple(bases)


def merge(entries: Iterable[ClassEntry]) -> ClassIndex:
    """Group entries by class name; distinct base lists are kept apart."""
    bases: dict[str, list[tuple[str, ...]]] = {}
    attrs: dict[str, dict[str, str]] = {}
    where: dict[str, str] = {}
    for name, class_bases, class_attrs, location in entries:
        known = bases.setdefault(name, [])
        if class_bases not in known:
            known.append(class_bases)
        if class_attrs:
            attrs.setdefault(name, {}).update(class_attrs)
        where.setdefault(name, location)
    return ClassIndex({name: tuple(v) for name, v in bases.items()}, attrs, where)
