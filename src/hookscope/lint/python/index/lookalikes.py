"""Plain classes that look like modules: a ``forward`` and module-only methods of their own.

A controller with no base class may define ``forward``, ``parameters`` and ``cuda`` that
hand the work on to the modules it holds; in a project that defines such a class, the
module-only methods it defines are no evidence of a module (`evidence`). Found from raw
bytes in the first pass, like the rest of the index.
"""

from __future__ import annotations

import re

from hookscope.lint.python.facts import known

# A class with no base, or only ``object``: ``class C:``, ``class C():``, ``class C(object):``.
_PLAIN_CLASS = re.compile(rb"class[ \t]+\w+[ \t]*(?:\([ \t]*(?:object)?[ \t]*\))?[ \t]*:")
_DEF = re.compile(rb"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(")
_MODULE_ONLY_DEF = re.compile(
    rb"def[ \t]+(?:" + b"|".join(m.encode() for m in sorted(known.MODULE_ONLY_METHODS)) + rb")\b"
)


def scan_lookalikes(data: bytes, first: int = 0) -> tuple[str, ...]:
    """The module-only methods (`known.MODULE_ONLY_METHODS`) that a class of ``data`` with no
    base defines next to a ``forward`` of its own, sorted.

    ``first``: where the first ``forward`` of ``data`` starts, if known (no ``def forward``
    starts more than four bytes before it: the search for one starts there).
    """
    if data.find(b"def forward", max(0, first - 4)) < 0 or not _MODULE_ONLY_DEF.search(data):
        return ()
    found: set[str] = set()
    for match in _PLAIN_CLASS.finditer(data):
        start = match.start()
        indent = data[data.rfind(b"\n", 0, start) + 1 : start]
        if indent.strip(b" \t"):
            continue  # "class" not at the start of a line
        methods = _methods(data, match.end(), len(indent))
        if "forward" in methods:
            found.update(methods & known.MODULE_ONLY_METHODS)
    return tuple(sorted(found))


def _methods(data: bytes, begin: int, outer: int) -> set[str]:
    """The names ``def``-ined at the first indentation of the class body that starts after
    ``begin`` (the body ends at the first line indented ``outer`` or less)."""
    names: set[str] = set()
    body: int | None = None
    end = data.find(b"\n", begin)
    while end != -1:
        start, end = end + 1, data.find(b"\n", end + 1)
        line = data[start : len(data) if end == -1 else end]
        text = line.lstrip(b" \t")
        if not text.strip() or text.startswith(b"#"):
            continue
        depth = len(line) - len(text)
        if depth <= outer:
            break
        if body is None:
            body = depth
        if depth == body and (found := _DEF.match(text)) is not None:
            names.add(found.group(1).decode("ascii", errors="replace"))
    return names
