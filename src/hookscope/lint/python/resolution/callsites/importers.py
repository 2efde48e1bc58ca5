"""The project files that import a name, and their calls of it.

The importers come from a text scan of the index's files, once per index and process;
each is parsed on demand, once. A use other than a call (a callback handed on) makes the
calls unknown; calls through an alias count, and namesakes are told apart by the module
their callers import them from.
"""

from __future__ import annotations

import ast
import os
import re
import weakref
from typing import Literal

from hookscope.lint.engine.index import ClassIndex, ImportLists, defined_in
from hookscope.lint.engine.source import DEFAULT_MAX_FILE_SIZE, Unreadable, read_bytes
from hookscope.lint.python.index.importlists import import_lists
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import foreign_file
from hookscope.lint.python.resolution.kinds import NAMESPACE, Kind
from hookscope.lint.python.resolution.signatures import used_here

# A call, the resolver of its file, and the calling scope.
Site = tuple["Context", ast.Call, Scope]

# Files that import a name a caller needs more than this are not read one by one.
MAX_IMPORTERS = 30

# `importlists.ImportLists` of every project file with classes or functions, for one index
_IMPORT_LISTS: list[ImportLists] = []
_IMPORTERS: dict[str, list[str]] = {}  # name -> the files importing it, as asked
_MODULE_IMPORTERS: dict[str, list[str]] = {}  # module stem -> the files importing from it
_IMPORTERS_INDEX: list[tuple[int, str, int]] = [(0, "", 0)]


def _refresh(index: ClassIndex) -> None:
    stamp = (id(index), index.root, len(index.defs) + len(index.functions))
    if _IMPORTERS_INDEX[0] != stamp:
        _IMPORTERS_INDEX[0] = stamp
        _IMPORTERS.clear()
        _MODULE_IMPORTERS.clear()
        known = index.import_lists  # scanned with the index; else the files are read here
        _IMPORT_LISTS[:] = known if known is not None else _import_lists(index)


def module_importers(index: ClassIndex, stem: str) -> list[str]:
    """The project files with a ``from <...>.stem import ...`` (``from .losses import
    init_loss`` for ``stem`` ``losses``)."""
    _refresh(index)
    if stem not in _MODULE_IMPORTERS:
        word = re.compile(rb"(?:^|\.)" + re.escape(stem.encode()) + rb"$", re.MULTILINE)
        _MODULE_IMPORTERS[stem] = [
            where for where, _, modules in _IMPORT_LISTS if word.search(modules)
        ]
    return _MODULE_IMPORTERS[stem]


def star_importers(index: ClassIndex, stem: str) -> list[str]:
    """The project files with a ``from <...>.stem import *``."""
    _refresh(index)
    word = re.compile(rb"(?:^|\.)" + re.escape(stem.encode()) + rb"$")
    return [
        where
        for where, listed, modules in _IMPORT_LISTS
        if b"*" in listed
        and any(
            names.strip() == b"*" and word.search(module)
            for names, module in zip(listed.split(b"\n"), modules.split(b"\n"), strict=False)
        )
    ]


def importers(index: ClassIndex, name: str) -> list[str]:
    """The project files (those the index holds classes or functions of) with a
    ``from ... import name`` (or ``... as name``)."""
    _refresh(index)
    if name not in _IMPORTERS:
        raw = name.encode()
        word = re.compile(rb"\b" + re.escape(raw) + rb"\b")
        _IMPORTERS[name] = [
            where for where, listed, _ in _IMPORT_LISTS if raw in listed and word.search(listed)
        ]
    return _IMPORTERS[name]


def _import_lists(index: ClassIndex) -> list[ImportLists]:
    """`importlists.ImportLists` of every project file (one with classes or functions in
    ``index``) that has them, read once per index that does not carry them."""
    entries = [where for defs in index.defs.values() for _, where in defs]
    entries += [entry[3] for found in index.functions.values() for entry in found]
    out = []
    for where in sorted({w.rpartition(":")[0] for w in entries}):
        path = os.path.join(index.root, where) if index.root else where
        try:
            data = read_bytes(path, DEFAULT_MAX_FILE_SIZE)
        except Unreadable:
            continue
        lists = import_lists(data, where)
        if lists is not None:
            out.append(lists)
    return out


def same_file(resolver: Context, path: str) -> bool:
    """Whether ``path`` (relative to the project root) is the file ``resolver`` reads."""
    root = resolver.index.root
    full = os.path.join(root, path) if root else path
    own = resolver.file.path  # (a file read for another's sake: relative to the root too)
    own = own if os.path.isabs(own) or not root else os.path.join(root, own)
    return os.path.abspath(full) == os.path.abspath(own)


def handed_on(other: Context, name: str) -> bool:
    """Whether the file of ``other`` names ``name`` other than in calls (handed on), unless
    no code uses it (an import that only a comment or a string mentions again)."""
    if name not in other.file.text:
        return False
    return not other.complete or used_here(other, name)


def function_calls(resolver: Context, name: str, where: str) -> list[Site] | None:
    """Every call in the other project files of the function ``name`` defined in ``where``,
    with the file's resolver and the calling scope; ``None`` when they cannot all be seen."""
    # ``from pkg.utils import compare``, or ``from pkg import utils as u`` and ``u.compare``
    stem = os.path.basename(where).removesuffix(".py")
    through = importers(resolver.index, stem)  # (a common stem, ``utils``, is left out)
    named = [*importers(resolver.index, name), *star_importers(resolver.index, stem)]
    files = sorted({*named, *(through if len(through) <= MAX_IMPORTERS else ())})
    if not files or len(files) > MAX_IMPORTERS:
        return None
    sites: list[Site] = []
    for other_where in files:
        other = foreign_file(resolver, other_where)
        if other is None:
            return None  # unreadable, or this file: its calls were looked at already
        calls = _calls_in(other, name, where)
        if calls is None:
            return None  # used some other way than called (handed on, say)
        for call, caller in calls:
            bound = "yes" if _runs(other, call, caller, name, where) else None
            bound = bound or imported_as(other, call, caller, name, where)
            if bound == "unknown":
                return None
            if bound == "yes":
                sites.append((other, call, caller))
    return sites


def _calls_in(other: Context, name: str, where: str) -> list[tuple[ast.Call, Scope]] | None:
    """The calls in ``other`` that may run the ``name`` of ``where``: by that name (unless
    only a namesake is imported as it) and by every name it is imported as, in any scope;
    ``None`` when a name it goes by is used other than called."""
    aliases: set[str] = set()
    plain = elsewhere = False
    for node in import_froms(other.file.tree):
        for alias in node.names:
            local = alias.asname or alias.name
            if alias.name == name and import_names(
                other, f"{node.module or ''}.{name}", name, where
            ):
                plain = plain or local == name
                if local != name:
                    aliases.add(local)
            elif local == name:  # a namesake from another module, or another function so named
                elsewhere = True
    calls: list[tuple[ast.Call, Scope]] = []
    if plain or not elsewhere:
        calls = list(other.calls_named(name))
        if not calls and handed_on(other, name):
            return None
    for local in sorted(aliases):
        by_alias = other.calls_named(local)
        if not by_alias:
            return None  # imported under that name, and handed on or not called
        calls.extend(by_alias)
    return calls


# tree -> its ``from ... import`` statements, in any scope (kept while the tree lives)
_IMPORT_FROMS: weakref.WeakKeyDictionary[ast.AST, list[ast.ImportFrom]] = (
    weakref.WeakKeyDictionary()
)


def import_froms(tree: ast.Module) -> list[ast.ImportFrom]:
    """Every ``from ... import`` statement of ``tree``, nested ones included (found once)."""
    found = _IMPORT_FROMS.get(tree)
    if found is None:
        found = _IMPORT_FROMS[tree] = []
        todo: list[ast.stmt] = list(tree.body)
        while todo:  # statements only: an import is one, expressions hold none
            stmt = todo.pop()
            if isinstance(stmt, ast.ImportFrom):
                found.append(stmt)
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(stmt, field, ()):
                    todo.extend(
                        getattr(child, "body", ()) if not isinstance(child, ast.stmt) else [child]
                    )
    return found


def may_run(other: Context, call: ast.Call, scope: Scope, name: str, where: str) -> bool:
    """Whether ``call`` may run the ``name`` of ``where`` (see `imported_as`)."""
    return imported_as(other, call, scope, name, where) == "yes"


def imported_as(
    other: Context, call: ast.Call, scope: Scope, name: str, where: str
) -> Literal["yes", "no", "unknown"]:
    """``"yes"`` when ``call`` calls a bare name that an import around it binds to the
    ``name`` of ``where`` (other branches may import another function as it); ``"no"`` when
    only imports of other things bind it; ``"unknown"`` otherwise."""
    func = call.func
    current: Scope | None = scope
    while isinstance(func, ast.Name) and current is not None:
        in_class = isinstance(current.node, ast.ClassDef)  # (a class body's names: not here)
        bindings = None if in_class else other.bindings_of(current.node).get(func.id)
        if bindings:
            if any(
                b.kind == "import" and import_names(other, b.origin, name, where) for b in bindings
            ):
                return "yes"
            return "no" if all(b.kind == "import" for b in bindings) else "unknown"
        current = current.parent
    if isinstance(func, ast.Name):
        return _star_imported(other, name, where)
    if isinstance(func, ast.Attribute):
        return _on_another_object(other, func.value, scope, where)
    return "unknown"


def _on_another_object(
    other: Context, value: ast.expr, scope: Scope, where: str
) -> Literal["no", "unknown"]:
    """``obj.name(...)``, where ``where`` defines ``name``: ``"no"`` when ``obj`` is bound
    around the call only by imports of other modules than that one and its packages, or is
    an instance or a class of a known kind (``clf.predict``: its method, not the function)."""
    if isinstance(value, ast.Name):
        current: Scope | None = scope
        while current is not None:
            in_class = isinstance(current.node, ast.ClassDef)
            bindings = None if in_class else other.bindings_of(current.node).get(value.id)
            if bindings:
                if not all(b.kind in ("import", "namespace") for b in bindings):
                    break
                return "unknown" if any(_holds(b.origin, where) for b in bindings) else "no"
            current = current.parent
    found = other.resolve(value, scope)
    if found.kind is Kind.UNKNOWN or found.name == NAMESPACE.name:
        return "unknown"
    return "no"


def _holds(module: str, where: str) -> bool:
    """Whether the dotted ``module`` is the module of the file ``where`` or a package
    holding it (its functions may be re-exported there)."""
    tail = "/" + module.strip(".").replace(".", "/")
    path = "/" + where.replace("\\", "/").removesuffix(".py").removesuffix("/__init__")
    return path.endswith(tail) or f"{tail}/" in path


def _star_imported(other: Context, name: str, where: str) -> Literal["yes", "no", "unknown"]:
    """A bare ``name`` no scope binds: ``"yes"`` when the one ``from module import *`` of
    ``other`` that provides a function so named is the module of ``where``."""
    providers = [
        node.module
        for node in other.file.tree.body
        if isinstance(node, ast.ImportFrom)
        and any(a.name == "*" for a in node.names)
        and node.module
        and not node.level
        and other.index.functions_in(name, node.module, other.where)
    ]
    if len(providers) != 1:
        return "unknown"
    return "yes" if import_names(other, f"{providers[0]}.{name}", name, where) else "no"


def import_names(other: Context, origin: str, name: str, where: str) -> bool:
    """Whether the import ``origin`` (``module.attr``) names the ``name`` of ``where``."""
    module, _, attr = origin.rpartition(".")
    if attr != name:
        return False
    index = other.index
    chosen = index.functions_in(name, module, other.where) or index.functions.get(name, ())
    if chosen:
        return len(chosen) == 1 and chosen[0][3].rpartition(":")[0] == where
    defs = other.index.defs.get(name, ())
    return defined_only_in(other, name, where) or {
        w.rpartition(":")[0] for _, w in defs if defined_in(w, module)
    } == {where}


def _runs(other: Context, call: ast.Call, scope: Scope, name: str, where: str) -> bool:
    """Whether ``call`` (in ``other``) runs the one function ``name`` defined in ``where``."""
    found = other.resolve(call.func, scope)
    module, _, called = found.factory.partition(":")
    if called != name:
        return False
    index = other.index
    chosen = index.functions_in(name, module, other.where) or index.functions.get(name, ())
    return len(chosen) == 1 and chosen[0][3].rpartition(":")[0] == where


def defined_only_in(other: Context, name: str, where: str) -> bool:
    """Whether every class ``name`` of the project is defined in ``where``."""
    return {w.rpartition(":")[0] for _, w in other.index.defs.get(name, ())} == {where}
