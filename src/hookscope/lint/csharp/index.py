"""The C# half of the project class index, read from raw bytes without parsing.

Every ``.cs`` file contributes its type declarations with their base lists and the
declared types of their members: fields and properties (``name``), methods (``name()``)
and indexers (``[]``). One regular expression finds braces, semicolons, strings and
comments; a stack of frames tells a class body from a method body. Entries live in the
engine's index under ``cs:Name`` keys, which no Python class name can collide with.
"""

from __future__ import annotations

import re

from hookscope.lint.engine.index import ClassEntry

PREFIX = "cs:"

# Uninteresting bytes are skipped by the possessive prefix (three times faster than
# letting the engine try every alternative at every position); group 1 is a brace or ";",
# group 2 a comment.
_TOKEN = re.compile(
    rb"[^/@$\"'{};]*+(?:([{};])"
    rb"|(//[^\n]*|/\*.*?\*/)"
    rb'|(?:\$@|@\$|@)"(?:[^"]|"")*"'
    rb'|\$?"(?:\\.|[^"\\\n])*"'
    rb"|'(?:\\.|[^'\\\n])+'"
    rb")",
    re.S,
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*", re.S | re.M)
_ATTRIBUTES = re.compile(r"^\s*(?:\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]\s*)+")
_TYPE_DECL = re.compile(
    r"\b(?:class|struct|interface|record(?:\s+(?:class|struct))?)\s+@?(\w+)\s*"
    r"(?:<(?:[^<>]|<[^<>]*>)*>)?\s*(?:\([^)]*\))?\s*(?::(.*?))?\s*(?:\bwhere\b.*)?$",
    re.S,
)
_NAMESPACE = re.compile(r"\bnamespace\b")
_OTHER_BLOCK = re.compile(r"\benum\b")
_MODIFIERS = (
    r"(?:(?:public|private|protected|internal|static|readonly|const|new|override|virtual|"
    r"abstract|sealed|extern|unsafe|volatile|async|partial|required|event|ref|fixed|"
    r"delegate|implicit|explicit)\s+)*"
)
_LEADING_MODIFIERS = re.compile(_MODIFIERS)
_NAME_AT_END = re.compile(r"\s@?(\w+)\s*(<(?:[^<>]|<[^<>]*>)*>)?\s*$")
_INDEXER = re.compile(r"\sthis\s*\[")
_SPACE = re.compile(r"\s+")
_NOT_TYPES = frozenset({"public", "private", "protected", "internal", "static", "return", "new"})
_KEYWORDS = frozenset({"operator", "get", "set", "init", "add", "remove"})

# Frame kinds on the brace stack.
_SCOPE, _CLASS, _INIT, _BODY = range(4)


def scan_csharp(data: bytes, path: str = "") -> list[ClassEntry]:
    """``(cs:Name, bases, members, path:line)`` of every type declared in one C# source."""
    if b"class" not in data and b"struct" not in data and b"interface" not in data:
        return []
    entries: list[tuple[str, tuple[str, ...], list[tuple[str, str]], str]] = []
    stack: list[tuple[int, int]] = [(_SCOPE, -1)]  # (kind, entry number for classes)
    start = 0  # where the declaration at the current class/namespace level began
    for match in _TOKEN.finditer(data):
        token = match.group(1)
        if token is None:  # a comment, string or character literal
            if match.group(2) and not data[start : match.start(2)].strip():
                start = match.end()  # a comment before a declaration is not part of it
            continue
        kind, owner = stack[-1]
        if kind in (_INIT, _BODY):
            if token == b"{":
                stack.append((_BODY, -1))
            elif token == b"}":
                stack.pop()
                if stack[-1][0] in (_SCOPE, _CLASS) and kind == _BODY:
                    start = match.end()
            continue
        if token == b"}":
            if len(stack) > 1:
                stack.pop()
            start = match.end()
            continue
        head = _clean(data[start : match.start(1)])
        if token == b";":
            if kind == _CLASS:
                _add_member(entries[owner][2], head)
            start = match.end()
            continue
        declared = _TYPE_DECL.search(head)
        if declared is not None:
            line = data.count(b"\n", 0, match.start(1)) + 1
            bases = _bases(declared.group(2) or "")
            entries.append((PREFIX + declared.group(1), bases, [], f"{path}:{line}"))
            stack.append((_CLASS, len(entries) - 1))
        elif _NAMESPACE.search(head):
            stack.append((_SCOPE, -1))
        elif kind == _CLASS and not _OTHER_BLOCK.search(head):
            initializer = _add_member(entries[owner][2], head)
            stack.append((_INIT if initializer else _BODY, -1))
            if initializer:
                continue  # the declaration goes on after the initializer's braces
        else:
            stack.append((_BODY, -1))
        start = match.end()
    return [(name, bases, tuple(members), where) for name, bases, members, where in entries]


def _clean(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if "/" in text or "#" in text:
        text = _COMMENT.sub(" ", text)
    return _ATTRIBUTES.sub("", text).strip() if "[" in text else text.strip()


def _add_member(members: list[tuple[str, str]], head: str) -> bool:
    """Record the member declared by ``head``; whether a ``{`` here opens an initializer."""
    cut = _cut(head)
    before = head[:cut]
    indexer = _INDEXER.search(before) if "this" in before else None
    found = _NAME_AT_END.search(before) if indexer is None else None
    end = indexer.start() if indexer is not None else found.start() if found is not None else 0
    declared = before[_LEADING_MODIFIERS.match(before).end() : end].strip()  # type: ignore[union-attr]
    if (
        declared
        and declared not in _NOT_TYPES
        and (found is None or found.group(1) not in _KEYWORDS)
    ):
        is_method = cut < len(head) and head[cut] == "("
        name = "[]" if found is None else found.group(1)
        if found is not None and is_method:  # "load()", or "load<2>()" for load<T, TResult>
            generic = found.group(2)
            name += f"<{generic.count(',') + 1}>()" if generic else "()"
        members.append((name, _SPACE.sub("", declared)))
    return cut < len(head) and head[cut] == "=" and not head.startswith("=>", cut)


def _cut(head: str) -> int:
    """Where a declaration's type and name end: the first ``(`` or ``=`` outside ``<...>``."""
    depth = 0
    for i, char in enumerate(head):
        if char == "<":
            depth += 1
        elif char == ">" and depth:
            depth -= 1
        elif char in "(=" and not depth:
            return i
    return len(head)


def _bases(raw: str) -> tuple[str, ...]:
    """Split a base list at its top-level commas (``A<B, C>, D`` is two bases)."""
    bases: list[str] = []
    part: list[str] = []
    depth = 0
    for char in raw:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == "," and depth == 0:
            bases.append("".join(part))
            part = []
        else:
            part.append(char)
    bases.append("".join(part))
    return tuple(b for b in (_SPACE.sub("", b) for b in bases) if b)
