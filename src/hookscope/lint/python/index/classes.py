"""The Python half of the project index, read from raw bytes without parsing.

Regular expressions, not parsing, so that every file of a large tree contributes for a
few milliseconds; only files that pass the pre-filter are parsed. Bases are kept as
written (``nn.Module``); ``self.x: T = ...`` annotations are credited to the nearest
``class`` line above.

Module-level aliases used as bases (``MyModule = torch.jit.ScriptModule``, then
``class RWKV_RNN(MyModule)``) become pseudo classes: for a bare base the file neither
imports nor defines, each assignment of a class-like name to it (``Name``, ``pkg.Name``,
or a conditional expression of such; not ``ABC = abc.ABC``) is one definition with that
value as base; several values must agree for the kind to be known.

Look-alikes: a plain class (no base) that defines ``forward`` and module-only methods
(``parameters``, ``cuda``) handing the work on to the modules it holds makes those
methods no evidence of a module in its project (`evidence`).
"""

from __future__ import annotations

import ast
import bisect
import builtins
import functools
import re
import sys

from hookscope.lint.engine.index import ClassEntry, FunctionEntry, absolute_module
from hookscope.lint.python.facts import known
from hookscope.lint.python.index.functions import Lines, scan_functions
from hookscope.lint.python.parse.bindings import dotted

# No "^" anchor: a literal-prefixed pattern is ten times faster; the line start is checked by hand.
_CLASS = re.compile(rb"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_SELF_ANNOTATION = re.compile(
    # Possessive where Python has them (3.11+): most of the ~45 "self." of a file are no
    # annotation, and backtracking into each attribute name cost a quarter of this
    # pass. Same matches: a name character or blank given back cannot be the ":".
    # The search runs on the "." and looks behind it for "self": the engine stops at
    # every byte equal to a pattern's first one, and "s" is four times as common as
    # "." in Python code (-30% for this pass). A match starts at the ".".
    rb"\.(?<=self\.)(\w++)[ \t]*+:[ \t]*([^=\n]+?)[ \t]*="
    if sys.version_info >= (3, 11)
    else rb"\.(?<=self\.)(\w+)[ \t]*:[ \t]*([^=\n]+?)[ \t]*="
)
_SUBSCRIPT = re.compile(r"\[[^\]]*\]")
_FROM_IMPORT = re.compile(rb"from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n;#]+)")
_IMPORTED = re.compile(r"(\w+)(?:\s+as\s+(\w+))?")
_JIT_INTERFACE = re.compile(rb"@(?:torch\.)?jit\.interface[ \t]*\r?\n[ \t]*$")
# A pseudo base marking ``@torch.jit.interface`` classes (TorchScript calls them
# through ``.forward()`` only); `known.HOOKLESS_MODULES` lists it.
JIT_INTERFACE = "@torch.jit.interface"


def scan_definitions(data: bytes, path: str = "") -> tuple[list[ClassEntry], list[FunctionEntry]]:
    """`scan_classes` and `scan_functions` of ``data``, its lines counted once for both."""
    classes, lines = _scan_classes(data, path)
    return classes, scan_functions(data, path, lines)


def scan_classes(data: bytes, path: str = "") -> list[ClassEntry]:
    """``(name, bases, annotated attributes, where)`` of every ``class`` statement in ``data``."""
    return _scan_classes(data, path)[0]


def _scan_classes(data: bytes, path: str) -> tuple[list[ClassEntry], Lines]:
    if b"class" not in data:
        return [], ([], [])
    starts: list[int] = []
    numbers: list[int] = []
    entries: list[tuple[str, tuple[str, ...], list[tuple[str, str]], str]] = []
    line, counted = 1, 0
    for match in _CLASS.finditer(data):
        start = match.start()
        if data[data.rfind(b"\n", 0, start) + 1 : start].strip(b" \t"):
            continue  # "class" not at the start of a line
        name = match.group(1).decode("ascii", errors="replace")
        raw = match.group(2)
        line, counted = line + data.count(b"\n", counted, start), start
        starts.append(start)
        numbers.append(line)
        bases = _bases(raw) if raw else ()
        if _JIT_INTERFACE.search(data, max(0, start - 80), start):
            bases = (JIT_INTERFACE,)
        entries.append((name, bases, [], f"{path}:{line}"))
    # Only a bare name can be imported (``from m import Base``); dotted bases stay as written.
    bare = {base for entry in entries for base in entry[1] if "." not in base}
    if bare:
        imported = _from_imports(data, path, bare)
        defined = {entry[0] for entry in entries}
        aliases = class_aliases(data, path, bare - defined - set(imported))
        if aliases:  # ``MyModule = torch.jit.ScriptModule``: a pseudo class with that base
            values = {b[0] for _, b, _, _ in aliases if "." not in b[0]}
            imported.update(_from_imports(data, path, values) if values else {})
            entries.extend((n, b, [], w) for n, b, _, w in aliases)
        entries = [
            (n, tuple(imported.get(b, b) for b in bases), a, w) for n, bases, a, w in entries
        ]
    if entries and b"self." in data:
        # Annotations above the first class have no owner; no match spans a line, and
        # only indentation precedes starts[0] on its line, so starting there is exact.
        for match in _SELF_ANNOTATION.finditer(data, starts[0]):
            owner = bisect.bisect_right(starts, match.start()) - 1
            attr = match.group(1).decode("ascii", errors="replace")
            entries[owner][2].append((attr, match.group(2).decode("utf-8", errors="replace")))
    classes = [(name, bases, tuple(attrs), where) for name, bases, attrs, where in entries]
    return classes, (starts, numbers)


def _from_imports(data: bytes, path: str = "", wanted: set[str] | None = None) -> dict[str, str]:
    """``{local name: "module.Name"}`` of the ``from module import Name [as local]`` lines.

    Bases are recorded with their module, so that ``class Net(Base)`` after ``from
    pkg.layers import Block as Base`` resolves to ``pkg/layers.py``'s ``Block`` among
    several. Relative imports are made absolute from ``path``; with ``wanted``, only the
    statements that mention one of those names are read.
    """
    out: dict[str, str] = {}
    if b"import" not in data:
        return out
    for module, raw in _FROM_IMPORT.findall(data):
        names = raw.decode("ascii", "replace")
        if wanted is not None and not any(map(names.__contains__, wanted)):
            continue
        prefix = absolute_module(module.decode("ascii", "replace"), path)
        for name, alias in _IMPORTED.findall(names.strip("()")):
            if name != "import":
                out[alias or name] = f"{prefix}.{name}"
    return out


@functools.lru_cache(maxsize=1 << 14)
def _bases(written: bytes) -> tuple[str, ...]:
    """The base classes in the parentheses of a ``class`` line (bytes as written); cached,
    as most classes of a tree repeat a few base lists."""
    raw = written.decode("utf-8", errors="replace")
    if "[" in raw:
        raw = _SUBSCRIPT.sub("", raw)
    bases = []
    for part in raw.split(","):
        part = part.split("#", 1)[0].strip()
        if part and "=" not in part:
            bases.append(part)
    return tuple(bases)


def class_aliases(data: bytes, path: str, names: set[str]) -> list[ClassEntry]:
    """``(alias, (value,), (), "path:line")`` for each assignment of a class-like name to
    one of ``names`` at the start of a line (module level or in an ``if``/``try`` there)."""
    entries: list[ClassEntry] = []
    for name in sorted(names - _BUILTINS):
        # Literal-prefixed (fast); the line start is checked by hand.
        pattern = re.escape(name.encode()) + rb"[ \t]*=(?!=)[ \t]*([^\n]*)"
        for match in re.finditer(pattern, data):
            start = match.start()
            if data[data.rfind(b"\n", 0, start) + 1 : start].strip(b" \t"):
                continue  # not at the start of a line: ``x.MyModule = ...``, ``a, MyModule = ...``
            values = _class_names(match.group(1).decode("utf-8", errors="replace"))
            if any(value.rsplit(".", 1)[-1] == name for value in values):
                continue  # ``ABC = abc.ABC``: the name already means that class
            line = data.count(b"\n", 0, start) + 1
            entries.extend((name, (value,), (), f"{path}:{line}") for value in values)
    return entries


_BUILTINS = frozenset(dir(builtins))


def _class_names(source: str) -> list[str]:
    """The class-like dotted names ``source`` (an expression) evaluates to, or ``[]``."""
    try:
        expr = ast.parse(source.split("#", 1)[0].strip(), mode="eval").body
    except SyntaxError:
        return []
    arms = [expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else [expr]
    names = [dotted(arm) or "" for arm in arms]
    if not all(names) or not all(n.rsplit(".", 1)[-1][:1].isupper() for n in names):
        return []
    return [n for n in names if n]


# A class with no base, or only ``object``: ``class C:``, ``class C():``, ``class C(object):``.
_PLAIN_CLASS = re.compile(rb"class[ \t]+\w+[ \t]*(?:\([ \t]*(?:object)?[ \t]*\))?[ \t]*:")
_DEF = re.compile(rb"(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(")
_MODULE_ONLY_DEF = re.compile(
    rb"def[ \t]+(?:" + b"|".join(m.encode() for m in sorted(known.MODULE_ONLY_METHODS)) + rb")\b"
)


def scan_lookalikes(data: bytes, first: int = 0) -> tuple[str, ...]:
    """The module-only methods (`known.MODULE_ONLY_METHODS`) that a class of ``data`` with no
    base defines next to a ``forward`` of its own, sorted; the search starts four bytes
    before ``first``, the first ``forward`` of ``data`` if known."""
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
