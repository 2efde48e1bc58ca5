"""Builtins that copy the elements of a collection or pick one: ``list(model.children())``,
``dict(model.named_modules())``, ``next(iter(models))``, ``max(models, key=score)``."""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.values.containers import element


def copied_elements(
    resolver: Context, builtin: str, arg: ast.expr, scope: Scope, depth: int
) -> Resolved | None:
    """``list(x)`` (``tuple``, ``sorted``, ``reversed``, ``iter``) holding the elements of
    ``x``, ``dict(pairs)`` holding their second items, ``next(x)`` one element of ``x``:
    when those elements are known (``model.children()`` gives modules)."""
    if builtin not in _COPIES or _shadowed(resolver, builtin, scope):
        return None
    position = 1 if builtin == "dict" else None
    inner = element(resolver, arg, position, scope, depth + 1)
    if inner.kind is Kind.UNKNOWN:
        return None
    if builtin in _PICKS:
        return inner
    return Resolved(Kind.OTHER, name=builtin, elem=inner.kind, elem_cls=inner.cls)


_PICKS = frozenset({"next", "min", "max"})  # one element: ``max(models, key=score)``
_COPIES = frozenset({"list", "tuple", "sorted", "reversed", "iter", "dict"}) | _PICKS


def picks_from(expr: ast.Call) -> bool:
    """Whether ``expr``'s keywords leave it a copy or a pick of its argument's elements:
    none, or only ``key=`` of ``min(xs, key=f)`` / ``max(xs, key=f)``."""
    if not expr.keywords:
        return True
    return (
        isinstance(expr.func, ast.Name)
        and expr.func.id in ("min", "max")
        and all(k.arg == "key" for k in expr.keywords)
    )


def _shadowed(resolver: Context, name: str, scope: Scope) -> bool:
    """Whether ``name`` is bound in ``scope`` or around it (not the builtin there)."""
    current: Scope | None = scope
    while current is not None:
        if resolver.bindings_of(current.node).get(name):
            return True
        current = current.parent
    return False
