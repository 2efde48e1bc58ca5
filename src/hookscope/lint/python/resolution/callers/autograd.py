"""Modules handed into a custom autograd ``Function`` (``torch.autograd.Function``).

``Fn.apply(x, self.layer)`` runs ``Fn.forward(ctx, x, layer)`` (no ``ctx`` when the class
defines ``setup_context``): its parameters are what every ``Fn.apply(...)`` in this file
and the files importing ``Fn`` passes, when ``apply`` is used only in calls there.
``ctx.layer = layer`` in ``forward`` is what ``backward`` reads as ``ctx.layer``.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.callsites.callees import add_passed
from hookscope.lint.python.resolution.callsites.importers import MAX_IMPORTERS, importers
from hookscope.lint.python.resolution.classes import base_names
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign_file, import_origin
from hookscope.lint.python.resolution.kinds import Kind, Resolved, agreed
from hookscope.lint.python.resolution.methods import is_staticmethod, own_methods

_BASES = frozenset({"Function", "InplaceFunction"})
_SAVING = ("forward", "setup_context")  # the static methods that fill ``ctx``


def autograd_class(resolver: Context, cls: ast.ClassDef) -> bool:
    """Whether ``cls`` derives (directly) from torch's autograd ``Function``."""
    module_scope = resolver.scope_of(resolver.file.tree)
    for base in base_names(cls):
        if base.rpartition(".")[2] not in _BASES:
            continue
        origin = import_origin(resolver, base, module_scope) or base
        if origin.startswith("torch.autograd") or ".autograd." in f".{base}":
            return True
    return False


def applied(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """The parameter ``name`` of ``func``, the static ``forward`` of an autograd
    ``Function`` of this file: what every ``Cls.apply(...)`` call passes, when each
    passes the same kind."""
    cls = scope.cls
    if (
        cls is None
        or cls not in resolver.file.tree.body
        or scope.method is not func
        or func.name != "forward"
        or not is_staticmethod(func)
        or not autograd_class(resolver, cls)
    ):
        return None
    skip = 0 if "setup_context" in own_methods(cls) else 1
    files = importers(resolver.index, cls.name)
    if len(files) > MAX_IMPORTERS:
        return None
    results: list[tuple[ast.Call, str, Resolved]] = []
    for other in [resolver, *(foreign_file(resolver, where) for where in files)]:
        if other is None:
            return None
        if f"{cls.name}.apply" in other.file.text and not other.calls_named("apply"):
            return None  # ``fn = Cls.apply``: called out of sight
        for call, caller in other.calls_named("apply"):
            if not isinstance(call.func, ast.Attribute):
                continue
            target = other.resolve(call.func.value, caller, depth + 1)
            if not (target.is_class and target.name == cls.name):
                continue  # another class's ``apply``
            if not add_passed(results, other, func, skip, (call, caller), name, depth):
                return None
    return agreed(results, f"every {cls.name}.apply(...)", name)


def saved_on_ctx(
    resolver: Context, expr: ast.Attribute, scope: Scope, depth: int
) -> Resolved | None:
    """``ctx.layer`` in a static method of an autograd ``Function`` of this file: what
    ``forward``/``setup_context`` assign to it (all of them, when they agree)."""
    cls, method = scope.cls, scope.method
    if cls is None or method is None or not is_staticmethod(method):
        return None
    params = [*method.args.posonlyargs, *method.args.args]
    if not (isinstance(expr.value, ast.Name) and params and params[0].arg == expr.value.id):
        return None
    if not autograd_class(resolver, cls):
        return None
    results: list[Resolved] = []
    for saving in (m for n, m in own_methods(cls).items() if n in _SAVING and is_staticmethod(m)):
        own = [*saving.args.posonlyargs, *saving.args.args][:1]
        if not own:
            continue
        spelled = f"{own[0].arg}.{expr.attr}"
        for node in ast.walk(saving):
            if isinstance(node, ast.Assign) and any(dotted(t) == spelled for t in node.targets):
                results.append(resolver.resolve(node.value, resolver.scope_of(saving), depth + 1))
    if not results or len({(r.kind, r.is_class) for r in results}) != 1:
        return None
    return results[0] if results[0].kind is not Kind.UNKNOWN else None
