"""What ``x[i]`` is: an element of a display, a table entry, a container's member, an
item a class's ``__getitem__`` returns, a tuple's element (of a name, or of what a call
returns: ``make()[0]``) or a registry's class."""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.methods import method_value
from hookscope.lint.python.resolution.registries import registry_class
from hookscope.lint.python.resolution.signatures import unpacked
from hookscope.lint.python.resolution.values.containers import entry_of, literal_element, member
from hookscope.lint.python.resolution.values.tuples import tuple_item


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
    if found.kind is Kind.UNKNOWN and base.cls and not base.is_class:
        item = (
            None
            if isinstance(expr.slice, ast.Slice)
            else method_value(resolver, base.cls, "__getitem__", depth)
        )  # ``ensemble[0]``
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
