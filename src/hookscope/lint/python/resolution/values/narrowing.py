"""``isinstance`` narrowing: ``x`` is a ``T`` inside ``if isinstance(x, T):`` (and the
``a`` of ``a if isinstance(x, T) else b``), and after ``assert isinstance(x, T)`` or
``self.assertIsInstance(x, T)`` in the same function; ``issubclass`` says it of a class.
Several classes (``isinstance(x, (A, B))``) narrow only when they are all of one kind.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved

_ASSERT_METHODS = frozenset({"assertTrue", "assert_", "assertIsInstance"})


@dataclass(frozen=True)
class Guard:
    """One ``isinstance(target, classes)`` check and the lines where it holds."""

    target: str  # ast.dump of the checked expression
    classes: ast.expr
    first: tuple[int, int]  # (line, column) where the guard starts to hold
    last: tuple[int, int]  # and where it stops
    check: ast.Call


def guards(owner: ast.AST) -> list[Guard]:
    """Every ``isinstance`` guard in ``owner``'s body (nested functions included)."""
    out: list[Guard] = []
    end = (getattr(owner, "end_lineno", None) or 10**9, 10**9)
    for node in ast.walk(owner):
        if isinstance(node, ast.If):
            first, last = (node.body[0].lineno, 0), (node.body[-1].end_lineno or 10**9, 10**9)
            tests = [node.test]
        elif isinstance(node, ast.IfExp):  # only its body: the else part may share the line
            body = node.body
            first = (body.lineno, body.col_offset)
            last = (body.end_lineno or body.lineno, body.end_col_offset or 10**9)
            tests = [node.test]
        elif isinstance(node, ast.Assert):
            first, last, tests = (node.lineno + 1, 0), end, [node.test]
        elif isinstance(node, ast.Call) and _assert_call(node):
            first, last, tests = (node.lineno + 1, 0), end, list(node.args[:1])
            if isinstance(node.func, ast.Attribute) and node.func.attr == "assertIsInstance":
                tests = [ast.Call(ast.Name("isinstance"), list(node.args[:2]), [])]
                ast.copy_location(tests[0], node)
        else:
            continue
        for test in tests:
            for check in _isinstance_checks(test):
                out.append(Guard(ast.dump(check.args[0]), check.args[1], first, last, check))
    return out


def _assert_call(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr in _ASSERT_METHODS and bool(node.args)


def _isinstance_checks(test: ast.expr) -> Iterator[ast.Call]:
    """``isinstance(x, T)`` calls a test implies (``and`` chains included)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            yield from _isinstance_checks(value)
    elif (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id in ("isinstance", "issubclass")
        and len(test.args) == 2
    ):
        yield test


# scope node -> its guards (kept while the tree lives)
_GUARDS: weakref.WeakKeyDictionary[ast.AST, list[Guard]] = weakref.WeakKeyDictionary()


def narrowed_here(resolver: Context, expr: ast.expr, scope: Scope) -> Resolved | None:
    """The kind an ``isinstance`` guard of ``expr``'s scope narrows it to at its line."""
    found = _GUARDS.get(scope.node)
    if found is None:
        found = _GUARDS[scope.node] = guards(scope.node)
    return narrowed(resolver, found, expr, scope)


def narrowed(
    resolver: Context, found: list[Guard], expr: ast.expr, scope: Scope
) -> Resolved | None:
    """The kind ``expr`` is narrowed to at its line by one of ``found``; ``None`` if none."""
    target = ast.dump(expr)
    where = (getattr(expr, "lineno", 0), getattr(expr, "col_offset", 0))
    for guard in found:
        if guard.target != target or not guard.first <= where <= guard.last:
            continue
        kind = _class_kind(resolver, guard.classes, scope)
        if kind is not None:
            shown = " ".join(ast.unparse(guard.check).split())
            via = f"{shown} at {resolver.file.path}:{guard.check.lineno}"
            subclass = getattr(guard.check.func, "id", "") == "issubclass"
            return Resolved(kind, is_class=subclass, via=via)  # issubclass: a class of it
    return None


def _class_kind(resolver: Context, classes: ast.expr, scope: Scope) -> Kind | None:
    """The one kind of ``T`` (or of every class of a tuple ``(A, B)``); ``None`` if mixed."""
    members = classes.elts if isinstance(classes, ast.Tuple) else [classes]
    found = [resolver.resolve(member, scope) for member in members]
    kinds = {r.kind if r.is_class else Kind.UNKNOWN for r in found}
    kind = kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
    return None if kind is Kind.UNKNOWN else kind
