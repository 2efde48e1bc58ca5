"""What ``x[i]`` is: an element of a display, a table entry, a container's member, an
item a class's ``__getitem__`` returns, a tuple's element (of a name, a fixture, or of
what a call returns: ``make()[0]``) or a registry's class.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.bindings import Binding, returned
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, Function, bound_around
from hookscope.lint.python.resolution.crossfile import fixture_def
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.literals import entry_of, literal_element, member
from hookscope.lint.python.resolution.methods import method_value
from hookscope.lint.python.resolution.registries import registry_class
from hookscope.lint.python.resolution.signatures import tuple_element, unpacked


def subscript(resolver: Context, expr: ast.Subscript, scope: Scope, depth: int) -> Resolved:
    """``expr`` (``x[i]`` or ``x[a:b]``) evaluated in ``scope``."""
    if isinstance(expr.value, (ast.Dict, ast.List, ast.Tuple)):
        return literal_element(resolver, expr.value, scope, depth)
    if isinstance(expr.value, ast.Name) and not isinstance(expr.slice, ast.Slice):
        entry = entry_of(resolver, expr.value, scope, depth)  # ``BUILDERS[name]``
        if entry is not None:
            return entry
    position = _constant_index(expr.slice)
    if isinstance(expr.value, ast.Call) and position is not None:
        element = unpacked(resolver, expr.value, position, scope, depth)  # ``make()[0]``
        if element.kind is not Kind.UNKNOWN:
            return element
    base = resolver.resolve(expr.value, scope, depth + 1)
    if isinstance(expr.slice, ast.Slice) and (base.container or base.elem is not None):
        return base  # a slice of a ModuleList, or of a list, holds the same kind
    found = member(resolver, base, scope)
    if base.elem is not None and base.via and not found.via:  # ``children[0]``
        found = replace(found, via=f"an element of {base.via}")
    on_instance = found.kind is Kind.UNKNOWN and base.cls and not base.is_class
    if on_instance and not isinstance(expr.slice, ast.Slice):  # ``ensemble[0]``
        item = method_value(resolver, base.cls, "__getitem__", depth)
        if item is not None:
            return item
    if found.kind is Kind.UNKNOWN and base.kind is not Kind.MODULE:
        item = tuple_item(resolver, expr, scope, depth)
        return item or registry_class(resolver, expr.value, scope) or found
    return found


def _constant_index(index: ast.expr) -> int | None:
    """``i`` of ``[i]``, a non-negative int literal; else ``None``."""
    if isinstance(index, ast.Constant) and type(index.value) is int and index.value >= 0:
        return index.value
    return None


def tuple_item(resolver: Context, expr: ast.Subscript, scope: Scope, depth: int) -> Resolved | None:
    """``name[i]`` (``i`` a non-negative int) when ``name`` holds a tuple whose element
    ``i`` is known; ``None`` otherwise."""
    position = _constant_index(expr.slice)
    if not isinstance(expr.value, ast.Name) or position is None:
        return None
    name = expr.value.id
    around = bound_around(resolver, name, scope)
    if around is None:
        return None
    current, bindings = around
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


def _returned_item(owner: Context, func: Function, position: int, depth: int) -> Resolved | None:
    """Element ``position`` of what the fixture ``func`` returns or yields, when each of
    its returns (yields) is a tuple that long."""
    returns, yields = returned(func)
    what = f"fixture {func.name}() gives"
    result = tuple_element(owner, func, returns or yields, position, depth, what)
    return None if result.kind is Kind.UNKNOWN else result
