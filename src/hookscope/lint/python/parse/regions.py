"""Parse less: keep only the statements that can hold a finding.

Kept: every import; every top-level statement that calls ``.forward``, registers a hook or
compiles; inside a kept class, its header, class-level statements,
``__init__``/``forward``/``__call__``, methods that assign ``self.x`` and nested members
of interest. Other lines are blanked, so line and column numbers stay the file's. A wrong
guess (a column-0 line inside a string) fails to parse, and the whole file is parsed, as
when a rule needed something the mask may have dropped (`Analysis.needs_full`).
"""

from __future__ import annotations

import bisect
import re

from hookscope.lint.python.parse.pyfile import mention_lines

_HOT = re.compile(r"(?<!super\(\))\.\s*forward\b|register_\w+_hook|compile")
_SELF_ASSIGN = re.compile(r"self\.\w+\s*(?::[^=\n]*)?=[^=]")
_ALWAYS = re.compile(r"\s*(?:async\s+)?def\s+(?:__init__|forward|__call__)\b")
_DEF = re.compile(r"\s*(?:async\s+)?def\s")
# The character after the indentation of a line that starts no statement ("": too short).
_NOT_A_START = frozenset({"", " ", "\t", "#", ")", "]", "}", "\r", "\f"})
_CONTINUATION = frozenset({"else", "elif", "except", "finally", "case"})
_WORTH_IT = 0.9  # mask only when it drops more than 10% of the lines


def _statement_starts(lines: list[str], begin: int, end: int, indent: str) -> list[int]:
    starts: list[int] = []
    width = len(indent)
    # One comprehension over the lines, the loop below over the few that begin something.
    candidates = [
        i
        for i, line in enumerate(lines[begin:end], begin)
        if line[width : width + 1] not in _NOT_A_START and line.startswith(indent)
    ]
    decorated = False  # inside a statement's decorators, before its def/class line
    for i in candidates:
        line = lines[i]
        word = line[width:].split(None, 1)[0].rstrip(":")
        if word in _CONTINUATION:
            continue
        if decorated:  # decorators and what they decorate are one statement
            decorated = line[width] == "@"
            continue
        starts.append(i)
        decorated = line[width] == "@"
    return starts


def _hot_lines(text: str, lines: list[str], mentions: list[int] | None = None) -> list[int]:
    """The 0-based numbers of the ``lines`` of ``text`` that `_HOT` matches, ascending;
    only the lines that mention ``forward``, ``_hook`` or ``compile`` are searched
    (``mentions``: their 1-based numbers, `pyfile.mention_lines`, found here unless given).
    """
    if mentions is None:
        mentions = mention_lines(text)
    return [line - 1 for line in mentions if _HOT.search(lines[line - 1])]


def _hot(hot: list[int], begin: int, end: int) -> bool:
    """Whether one of the lines ``begin`` to ``end`` (excluded) is hot."""
    i = bisect.bisect_left(hot, begin)
    return i < len(hot) and hot[i] < end


def mask(
    text: str, lines: list[str] | None = None, mentions: list[int] | None = None
) -> str | None:
    """The text with uninteresting statements blanked, or ``None`` if not worth it;
    ``lines`` and ``mentions`` are computed here unless given (see `PyFile.from_tree`)."""
    lines = text.split("\n") if lines is None else lines
    starts = _statement_starts(lines, 0, len(lines), "")
    if len(starts) < 2:
        return None
    keep = [False] * len(lines)
    hot_lines = _hot_lines(text, lines, mentions)
    for begin, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        is_import = lines[begin].startswith(("import ", "from "))
        hot = not is_import and _hot(hot_lines, begin, end)
        if is_import or (hot and not _keep_class_members(lines, begin, end, keep, hot_lines)):
            keep[begin:end] = [True] * (end - begin)
    if sum(keep) > _WORTH_IT * len(lines):
        return None
    return "\n".join(line if k else "" for line, k in zip(lines, keep, strict=True))


def _keep_class_members(
    lines: list[str], begin: int, end: int, keep: list[bool], hot: list[int]
) -> bool:
    """Keep the useful members of a class statement; ``False`` if it is not a plain class."""
    header = _past_decorators(lines, begin, end)
    if (
        header >= end
        or not lines[header].lstrip().startswith("class ")
        or not lines[header].rstrip().endswith(":")
    ):
        return False
    outer = lines[header][: len(lines[header]) - len(lines[header].lstrip())]
    body = header + 1
    while body < end and (not lines[body].strip() or lines[body].lstrip().startswith("#")):
        body += 1
    if body >= end:
        return False
    indent = lines[body][: len(lines[body]) - len(lines[body].lstrip())]
    members = _statement_starts(lines, body, end, indent)
    if len(indent) <= len(outer) or not members or members[0] != body:
        return False
    keep[begin:body] = [True] * (body - begin)
    for m_begin, m_end in zip(members, [*members[1:], end], strict=True):
        if _keep_class_members(lines, m_begin, m_end, keep, hot):
            continue  # a nested class: its own useful members are kept
        if _useful_member(lines, m_begin, m_end, hot):
            keep[m_begin:m_end] = [True] * (m_end - m_begin)
    return True


def _past_decorators(lines: list[str], begin: int, end: int) -> int:
    """The ``def``/``class`` line that the statement at ``begin`` decorates (``begin`` if none):
    past each ``@`` line and the lines that continue it (``@dec(`` over several lines)."""
    at, first = len(lines[begin]) - len(lines[begin].lstrip()), begin
    while first < end and (lines[first][at : at + 1] in _NOT_A_START or lines[first][at] == "@"):
        first += 1
    return first


def _useful_member(lines: list[str], begin: int, end: int, hot: list[int]) -> bool:
    first = _past_decorators(lines, begin, end)
    if first >= end or not _DEF.match(lines[first]):
        return True  # class-level statements: attributes, aliases such as __call__ = ...
    if _ALWAYS.match(lines[first]) or _hot(hot, begin, end):
        return True
    return any(_SELF_ASSIGN.search(lines[i]) for i in range(first, end))
