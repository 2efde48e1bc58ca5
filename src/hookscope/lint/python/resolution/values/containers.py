"""What collections hold: displays and comprehensions, elements of iterables, branches.

``for m in self.layers`` (a ``ModuleList``), ``for name, m in x.named_children()``,
``for i, m in enumerate(...)``, ``for a, b in zip(xs, ys)``, ``d.values()`` /
``d.items()``, ``A() if c else B()``; what literals hold is read by `literals`.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.appends import rows_of_modules
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import UNKNOWN, Kind, Resolved
from hookscope.lint.python.resolution.literals import (
    literal_element,
    member,
    named_display,
    one_class,
)

_DISPLAYS = (ast.List, ast.Tuple, ast.Set, ast.Dict)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)
# The displays and comprehensions `collection` resolves.
COLLECTIONS = (*_DISPLAYS, *_COMPREHENSIONS, ast.DictComp)


def collection(resolver: Context, expr: ast.expr, scope: Scope, depth: int) -> Resolved:
    """A list, tuple, set or dict display or comprehension: not a module, with the kind of
    its elements (values) when they all agree (``[Block() for _ in range(3)]``)."""
    if isinstance(expr, _DISPLAYS):
        inner = literal_element(resolver, expr, scope, depth)
    elif isinstance(expr, ast.DictComp):
        inner = resolver.resolve(expr.value, scope, depth + 1)
    elif isinstance(expr, _COMPREHENSIONS):
        inner = resolver.resolve(expr.elt, scope, depth + 1)
    else:
        return UNKNOWN
    if inner.kind is Kind.UNKNOWN or inner.is_class:
        return Resolved(Kind.OTHER)
    return Resolved(Kind.OTHER, elem=inner.kind, elem_cls=inner.cls)


def element(
    resolver: Context, iterable: ast.expr, position: int | None, scope: Scope, depth: int
) -> Resolved:
    """An element of ``iterable`` (``position``: the index in a tuple target, if any)."""
    if isinstance(iterable, ast.Call):
        func = iterable.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if attr in known.MODULE_ITERATORS and position is None:
            return Resolved(Kind.MODULE)
        if attr in known.NAMED_MODULE_ITERATORS and position == 1:
            return Resolved(Kind.MODULE)
        if (
            isinstance(func, ast.Name)
            and attr in _SAME_ELEMENTS
            and len(iterable.args) == 1
            and not iterable.keywords
        ):  # ``for m in list(model.children())``: the elements of what is copied
            return element(resolver, iterable.args[0], position, scope, depth)
        if attr == "enumerate" and iterable.args and position == 1:
            return element(resolver, iterable.args[0], None, scope, depth)
        if attr == "zip" and position is not None and position < len(iterable.args):
            return element(resolver, iterable.args[position], None, scope, depth)
        if attr == "values" and isinstance(func, ast.Attribute):
            return element(resolver, func.value, position, scope, depth)
        if attr == "items" and isinstance(func, ast.Attribute) and position == 1:
            return element(resolver, func.value, None, scope, depth)
    if position is None and _registered_child(iterable):
        return Resolved(Kind.MODULE, via="an element of a child in a module's `_modules`")
    if position is not None:  # ``for cls, fn in [(A, f), (B, g)]``: a column of the rows
        column = _column(resolver, iterable, position, scope, depth)
        if column is not None:
            return column
    if isinstance(iterable, (ast.List, ast.Tuple)):
        return literal_element(resolver, iterable, scope, depth) if position is None else UNKNOWN
    inner = resolver.resolve(iterable, scope, depth + 1)
    if position is not None:
        if inner.container and rows_of_modules(resolver, iterable, scope, depth):
            return Resolved(Kind.MODULE, via=f"a module of a row of {inner.via or 'a container'}")
        return UNKNOWN
    return member(resolver, inner, scope)


# Builtins whose result holds the elements of their one argument, in some order.
_SAME_ELEMENTS = frozenset({"list", "tuple", "sorted", "reversed", "iter"})


def _registered_child(iterable: ast.expr) -> bool:
    """``model._modules["features"]``: a child module registered on a module; one that is
    iterated is a container (``Sequential``, ``ModuleList``), whose elements are modules."""
    return (
        isinstance(iterable, ast.Subscript)
        and not isinstance(iterable.slice, ast.Slice)
        and isinstance(iterable.value, ast.Attribute)
        and iterable.value.attr == "_modules"
    )


def _column(
    resolver: Context, iterable: ast.expr, position: int, scope: Scope, depth: int
) -> Resolved | None:
    """Item ``position`` of every row of a list or tuple display of tuples (written in
    place or bound to a name), when those items all agree."""
    if isinstance(iterable, (ast.List, ast.Tuple)):
        owner, literal, where = resolver, iterable, scope
    elif isinstance(iterable, ast.Name):
        display = named_display(resolver, iterable, scope)
        if display is None or isinstance(display[1], ast.Dict):
            return None
        owner, literal, where = display[0], display[1], display[0].scope_of(display[2])
    else:
        return None
    rows = [e for e in literal.elts if isinstance(e, (ast.Tuple, ast.List))]
    if not rows or len(rows) != len(literal.elts) or any(len(r.elts) <= position for r in rows):
        return None
    results = [owner.resolve(row.elts[position], where, depth + 1) for row in rows]
    if len({(r.kind, r.is_class) for r in results}) != 1 or results[0].kind is Kind.UNKNOWN:
        return None
    return one_class(results[0], results)


def alternatives(expr: ast.IfExp | ast.BoolOp) -> list[ast.expr]:
    """The values ``a if c else b`` / ``a or b`` may take (``None`` left out; an ``and``
    chain gives none: its value may be a falsy operand)."""
    if isinstance(expr, ast.IfExp):
        values = [expr.body, expr.orelse]
    elif isinstance(expr.op, ast.Or):
        values = list(expr.values)
    else:
        return []
    return [v for v in values if not (isinstance(v, ast.Constant) and v.value is None)]


def branches(resolver: Context, expr: ast.IfExp | ast.BoolOp, scope: Scope, depth: int) -> Resolved:
    """``A() if c else B()``, ``net or Net()``: the kind every branch agrees on (`either`)."""
    return either([resolver.resolve(v, scope, depth + 1) for v in alternatives(expr)])


def either(results: list[Resolved]) -> Resolved:
    """One of several values: their kind when the known ones agree."""
    known_results = [r for r in results if r.kind is not Kind.UNKNOWN]
    if len({(r.kind, r.is_class) for r in known_results}) != 1:
        return UNKNOWN
    first = known_results[0]
    return first if len({r.cls for r in known_results}) == 1 else replace(first, cls="")
