"""Elements of tuples picked by a constant index: ``pair[0]`` where ``pair`` is a pytest
fixture, or a value, that returns ``(model, optimizer)``.

``model, opt = make()`` is resolved where the name is bound (`signatures.unpacked`); this
is the same fact read through an index: ``setup[0]`` for a fixture ``setup`` whose
every ``return`` is a tuple, ``made = make(); made[0]``, ``made = (net, opt); made[0]``.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import Binding, returned
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import fixture_def
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.signatures import tuple_element, unpacked


def tuple_item(resolver: Context, expr: ast.Subscript, scope: Scope, depth: int) -> Resolved | None:
    """``name[i]`` (``i`` a non-negative int) when ``name`` holds a tuple whose element
    ``i`` is known; ``None`` otherwise."""
    index = expr.slice
    if not (
        isinstance(expr.value, ast.Name)
        and isinstance(index, ast.Constant)
        and type(index.value) is int
        and index.value >= 0
    ):
        return None
    position, name = index.value, expr.value.id
    current: Scope | None = scope
    while current is not None:
        bindings = resolver.bindings_of(current.node).get(name) if current.node else None
        if bindings:
            break
        current = current.parent
    else:
        return None
    if all(b.kind == "opaque" and b.expr is None for b in bindings):
        found = fixture_def(resolver, name, current)
        return None if found is None else _returned_item(*found, position, depth)
    results = set()
    for binding in bindings:
        result = _item(resolver, binding, position, depth)
        if result is None:
            return None
        results.add(result)
    return results.pop() if len(results) == 1 else None


def _item(resolver: Context, binding: Binding, position: int, depth: int) -> Resolved | None:
    if binding.kind != "value" or binding.expr is None:
        return None
    scope = resolver.scope_of(binding.owner)
    value = binding.expr
    if isinstance(value, ast.Tuple):
        elts = value.elts
        if position >= len(elts) or any(isinstance(e, ast.Starred) for e in elts):
            return None
        result = resolver.resolve(elts[position], scope, depth + 1)
    elif isinstance(value, ast.Call):
        result = unpacked(resolver, value, position, scope, depth)
    else:
        return None
    return None if result.kind is Kind.UNKNOWN else result


def _returned_item(
    owner: Context, func: ast.FunctionDef | ast.AsyncFunctionDef, position: int, depth: int
) -> Resolved | None:
    """Element ``position`` of what the fixture ``func`` returns or yields, when each of
    its returns (yields) is a tuple that long."""
    returns, yields = returned(func)
    what = f"fixture {func.name}() gives"
    result = tuple_element(owner, func, returns or yields, position, depth, what)
    return None if result.kind is Kind.UNKNOWN else result
