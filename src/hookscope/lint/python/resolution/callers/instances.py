"""Calls of instances: what ``wrapper(embedding)`` passes to ``__call__(self, module)``.

An unannotated parameter of a plain class's ``__call__`` is what every call of an instance
of the class (or of a related project class) passes, in this file and in the files that
import one of those classes, when every such call passes a module. A ``__call__`` shaped
like a forward hook (``module, inputs, outputs``) is left alone: torch calls it.
"""

from __future__ import annotations

import ast
import builtins
import os
from collections.abc import Callable
from dataclasses import replace

from hookscope.lint.python.parse.pyfile import PyFile, Scope
from hookscope.lint.python.resolution.callsites.callees import add_passed, calls_here, runs_another
from hookscope.lint.python.resolution.callsites.importers import (
    MAX_IMPORTERS,
    handed_on,
    importers,
    module_importers,
)
from hookscope.lint.python.resolution.classes import base_names, subclasses_by_base
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign_file
from hookscope.lint.python.resolution.kinds import SETTLED, Kind, Resolved, agreed
from hookscope.lint.python.resolution.methods import find_method, is_staticmethod
from hookscope.lint.python.resolution.signatures import used_here

LookUp = Callable[[Context, Function, Scope, str, int], "Resolved | None"]


# One look-up at a time: resolving the callees of a whole file must not start another.
_BUSY: list[bool] = [False]


def given_to_instances(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """The parameter ``name`` of ``func``, the ``__call__`` of a module-level class (settled
    here: ``wrapper(embedding)`` calls it)."""
    if func.name != "__call__":
        return None
    return _one_at_a_time(_given, resolver, func, scope, name, depth) or SETTLED


def _given(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    cls = scope.cls
    params = [*func.args.posonlyargs, *func.args.args]
    if cls is None or cls not in resolver.file.tree.body:
        return None
    if func.name == "__call__" and len(params) > 3:
        return None  # (``self, module, inputs, outputs``: a hook, called by torch)
    types = _related(resolver, cls)
    files = sorted({f for t in types for f in importers(resolver.index, t)})
    if len(files) > MAX_IMPORTERS:
        return None
    others = [foreign_file(resolver, where) for where in files]
    results: list[tuple[ast.Call, str, Resolved]] = []
    for owner in [resolver, *(o for o in others if o is not None)]:
        for call, caller in _calls(owner.file):
            called = owner.resolve(call.func, caller, depth + 1)
            if called.is_class or called.function is not None or called.cls not in types:
                continue
            if not add_passed(results, owner, func, 1, (call, caller), name, depth):
                return None
    return agreed(results, f"every call of a {cls.name}", name)


def given_to_forward(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """The parameter ``name`` of ``func``, the ``forward`` of a module class: what every
    call of its instances passes (``layer(x, embedding=emb)`` runs ``forward`` through
    the hooks), when each passes a module."""
    if func.name != "forward" or scope.cls is None or scope.method is not func:
        return None
    if resolver.class_kind(scope.cls.name)[0] is not Kind.MODULE:
        return None
    if not resolver.complete:
        resolver.missed = True  # the calls may be in what a masked parse dropped
        return None
    return _one_at_a_time(_given, resolver, func, scope, name, depth)


def given_to_method(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """The parameter ``name`` of ``func``, a method of a module-level class that its own
    file never calls (but as another class's namesake): what every ``obj.method(...)`` on
    an instance of a related class passes in the files importing one (a base test class's
    ``self.check(model)``); settled."""
    if func.name == "__init__" or not (scope.self_name or is_staticmethod(func)):
        return None
    mentioned, calls = calls_here(resolver, func, scope)
    elsewhere = scope.self_name and all(runs_another(resolver, c, func) for c in calls)
    if not (calls and elsewhere) and mentioned and (calls or used_here(resolver, func.name)):
        return None  # called here (`passing`)
    return _one_at_a_time(_given_to_method, resolver, func, scope, name, depth) or SETTLED


def _one_at_a_time(
    look_up: LookUp, resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    if _BUSY[0]:
        return None
    _BUSY[0] = True
    try:
        return look_up(resolver, func, scope, name, depth)
    finally:
        _BUSY[0] = False


def _given_to_method(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    cls = scope.cls
    if cls is None or cls not in resolver.file.tree.body or scope.method is not func:
        return None
    static = is_staticmethod(func)  # ``Cls.check(model)`` or ``self.check(model)``
    skip = 0 if static else 1
    types = _related(resolver, cls, func.name)
    # ``from pkg.mod import Cls``, or ``from pkg import mod`` and ``mod.Cls(...)``
    stem = os.path.basename(resolver.file.path).removesuffix(".py")
    through = importers(resolver.index, stem) if stem != "__init__" else []
    # ``from .losses import init_loss``: a factory of this file may hand out its instances
    through += module_importers(resolver.index, stem) if stem != "__init__" else []
    named = {f for t in types for f in importers(resolver.index, t)}
    files = sorted({*named, *(through if len(through) <= MAX_IMPORTERS else ())})
    if len(files) > MAX_IMPORTERS:
        return None
    results: list[tuple[ast.Call, str, Resolved]] = []
    for other in (_file_of(resolver, where) for where in files):
        if other is None:
            return None
        calls = other.calls_named(func.name)
        if not calls and handed_on(other, func.name):
            return None  # handed on or called some other way
        for call, caller in calls:
            if not isinstance(call.func, ast.Attribute):
                return None
            receiver = other.resolve(call.func.value, caller, depth + 1)
            if receiver.classes and not receiver.is_class:  # one of several classes
                if not types.intersection(receiver.classes):
                    continue  # none of them has this method
                receiver = replace(receiver, cls=cls.name)  # it may run this one
            if receiver.cls and not receiver.is_class and receiver.cls not in types:
                continue  # a method of the same name on another class
            on_class = static and receiver.is_class and receiver.name in types
            if not on_class and (receiver.is_class or receiver.cls not in types):
                return None  # ``Cls.method(obj, x)``, or a receiver of unknown type
            if not add_passed(results, other, func, skip, (call, caller), name, depth):
                return None
    return agreed(results, f"every call of {cls.name}.{func.name}", name)


def _file_of(resolver: Context, where: str) -> Context | None:
    """The resolver of the project file ``where``: this one's own, or another's."""
    path = os.path.join(resolver.index.root, where) if resolver.index.root else where
    if os.path.abspath(path) == os.path.abspath(resolver.file.path):
        return resolver
    return foreign_file(resolver, where)


def _related(resolver: Context, cls: ast.ClassDef, method: str = "__call__") -> set[str]:
    """``cls``'s name with the project classes deriving from it and those it derives from
    that have ``method`` (a call typed as one of them may run ``cls``'s)."""
    names = {cls.name}
    todo = [b.rsplit(".", 1)[-1] for b in base_names(cls)]
    while todo:  # ancestors
        base = todo.pop()
        if base in names or (base not in resolver.file.classes and base not in resolver.index):
            continue
        if find_method(resolver, base, method) is None:
            continue  # neither it nor its bases declare ``method``
        names.add(base)
        local = resolver.file.classes.get(base)
        bases = [base_names(local)] if local is not None else resolver.index.get(base) or ()
        todo.extend(b.rsplit(".", 1)[-1] for group in bases for b in group)
    children = subclasses_by_base(resolver.index)
    down = {cls.name}
    todo = [cls.name]
    while todo:  # descendants, in the project index (this file's classes are in it too)
        for child in children.get(todo.pop(), ()):
            if child not in down:
                down.add(child)
                todo.append(child)
    return names | down


def _calls(pyfile: PyFile) -> list[tuple[ast.Call, Scope]]:
    """The calls in the file that may call an instance, with their scopes: of a local name
    (not a function, class, import or builtin) or of an attribute the file assigns on
    ``self``. Resolving every other callee would cost more than the rest of the analysis."""
    named: set[str] = set(dir(builtins))
    assigned: set[str] = set()
    for node in ast.walk(pyfile.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            named.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            named.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            assigned.add(node.attr)
    out = []
    stack: list[tuple[ast.AST, Scope]] = [(pyfile.tree, pyfile.scopes[id(pyfile.tree)])]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id not in named) or (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == scope.self_name
                and func.attr in assigned
            ):
                out.append((node, scope))
        inner = pyfile.scopes.get(id(node), scope)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return out
