"""Top-level functions of a file, from its bytes: what the class index knows of them.

Each top-level function is recorded with its return annotation and, when every
``return`` of its body returns a call, the names called (``return Net(...)``):
enough to resolve ``model = build_model(...)`` in another file (see `index`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from hookscope.lint.engine.index import FunctionEntry

# Offsets in a file and the numbers of their lines, ascending: where counting may resume.
Lines = tuple[list[int], list[int]]

# Literal-prefixed patterns (no leading "\n" or "\b"): the regex engine then skips to
# each "def"/"return" with a fast search; line starts and word starts are checked by hand.
_DEF = re.compile(rb"def[ \t]+(\w+)[ \t]*\(")
_ASYNC = re.compile(rb"async[ \t]+")
_D, _A = ord("d"), ord("a")  # the first bytes of "def" and "async"
# The end of a signature, with its return annotation if any: ") -> T:" or "):".
_SIGNATURE_END = re.compile(rb"\)[ \t]*(?:->[ \t]*([^\n]+?)[ \t]*)?:[ \t]*(?:#[^\n]*)?\r?\n")
_TOP_LEVEL = re.compile(rb"\n(?=[^\s#)\]}])")  # not the ")" closing a signature
# Every ``return`` word of a body (not inside a longer word), with the name it calls when
# it returns a call (``return Net(...)``) and b"" when not. The call is looked ahead at,
# not consumed: no ``return`` is skipped for lying inside the previous one's call.
# The search runs on "urn" ("u" is half as common as "r"); the rest of the word and its
# start are checked behind it, which keeps the fast search for the literal.
_RETURN = re.compile(
    rb"urn(?<=return)(?<![A-Za-z0-9_]return)\b(?=[ \t]+([A-Za-z_][\w.]*)[ \t]*\(|)"
)
_MAX_SIGNATURE = 4000


def scan_functions(data: bytes, path: str = "", known: Lines | None = None) -> list[FunctionEntry]:
    """Every top-level ``def`` of ``data`` with its return annotation and returned calls;
    ``known``: offsets whose line numbers were counted already (the ``class`` lines)."""
    if b"def" not in data:
        return []
    out: list[FunctionEntry] = []
    line, counted = 1, 0  # lines counted up to ``counted``, incrementally (defs come in order)
    offsets, numbers = known or ([], [])
    for match, line_start, end in _top_level_defs(data):
        begin = match.end()
        signature = _SIGNATURE_END.search(data, begin, min(end, begin + _MAX_SIGNATURE))
        arrow = signature.group(1) if signature else None
        annotation = arrow.decode("utf-8", "replace") if arrow else ""
        returns = _returned_calls(data, begin, end)
        if offsets and offsets[0] <= line_start:
            nearest = bisect.bisect_right(offsets, line_start) - 1
            if offsets[nearest] > counted:
                line, counted = numbers[nearest], offsets[nearest]
        line, counted = line + data.count(b"\n", counted, line_start), line_start
        out.append(
            (match.group(1).decode("ascii", "replace"), annotation, returns, f"{path}:{line}")
        )
    return out


def _top_level_defs(data: bytes) -> Iterator[tuple[re.Match[bytes], int, int]]:
    """Each top-level ``def`` of ``data`` (``async`` ones too): its match, the start of its
    line and the end of its body (where the next top-level line starts, or the end), in
    one pass over the top-level lines, without a loop over the methods.
    """
    pending = _def_at(data, 0) if data else None
    for top in _TOP_LEVEL.finditer(data):
        if pending is not None:
            yield pending[0], pending[1], top.start()
        pending = _def_at(data, top.end())
    if pending is not None:
        yield pending[0], pending[1], len(data)


def _def_at(data: bytes, start: int) -> tuple[re.Match[bytes], int] | None:
    """The ``def`` that the line starting at ``start`` opens, with ``start``; or ``None``."""
    first = data[start]
    if first == _D:
        found = _DEF.match(data, start)
    elif first == _A and (blanks := _ASYNC.match(data, start)) is not None:
        found = _DEF.match(data, blanks.end())
    else:
        return None
    return None if found is None else (found, start)


def _returned_calls(data: bytes, begin: int, end: int) -> tuple[str, ...]:
    """The names called by the ``return`` statements of ``data[begin:end]`` when every
    ``return`` returns a call (``return Net(...)``), else ``()``: one regular-expression
    pass, each ``return`` word with the name it calls or ``b""``.
    """
    called = _RETURN.findall(data, begin, end)
    if not called or not all(called):
        return ()
    return tuple(c.decode("ascii", "replace") for c in called)
