"""The calls of a file by the last name of their callee, and the names it uses otherwise."""

from __future__ import annotations

import ast
import weakref

from hookscope.lint.python.parse.bindings import child_nodes
from hookscope.lint.python.parse.pyfile import PyFile, Scope

# tree -> the names it uses outside the places `used_here` ignores, as `calls_by_name`
# found them (kept while the tree lives)
_USED: weakref.WeakKeyDictionary[ast.AST, set[str]] = weakref.WeakKeyDictionary()


_INERT_CALLS = ("super", "isinstance", "issubclass")


def calls_by_name(pyfile: PyFile) -> dict[str, list[tuple[ast.Call, Scope]]]:
    """Every call in the file by the last name of its callee, with the calling scope.

    A name also used other than as a callee (``callbacks.append(check)``) maps to ``None``:
    its calls cannot all be seen (such uses are kept for `used_here`).
    """
    out: dict[str, list[tuple[ast.Call, Scope]]] = {}
    escaped: set[str] = set()
    used: set[str] = set()
    inert: set[int] = set()
    stack: list[tuple[ast.AST, Scope]] = [(pyfile.tree, pyfile.scopes[id(pyfile.tree)])]
    callees: set[int] = set()
    while stack:
        node, scope = stack.pop()
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name:
                out.setdefault(name, []).append((node, scope))
                callees.add(id(func))
            if isinstance(func, ast.Name) and func.id in _INERT_CALLS:
                inert.update(id(a) for a in node.args)
        elif isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in callees:
            escaped.add(node.id if isinstance(node, ast.Name) else node.attr)
            if id(node) not in inert:
                used.add(node.id if isinstance(node, ast.Name) else node.attr)
        if isinstance(node, _ANNOTATED):
            _mark_annotations(node, inert)
        children = child_nodes(node)
        if id(node) in inert:
            inert.update(id(child) for child in children)
        inner = pyfile.scopes.get(id(node), scope)
        stack.extend([(child, inner) for child in children])
    _USED[pyfile.tree] = used
    return {
        name: sorted(calls, key=lambda c: (c[0].lineno, c[0].col_offset))
        for name, calls in out.items()
        if name not in escaped
    }


_ANNOTATED = (ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign)


def _mark_annotations(node: ast.AST, inert: set[int]) -> None:
    """Add the ids of ``node``'s annotation subtrees (which name classes, call nothing)."""
    if isinstance(node, ast.arg) and node.annotation is not None:
        inert.add(id(node.annotation))
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
        inert.add(id(node.returns))
    elif isinstance(node, ast.AnnAssign):
        inert.add(id(node.annotation))


def names_used(tree: ast.AST) -> set[str] | None:
    """The names ``tree`` uses outside calls' callees, annotations and ``super(...)`` /
    ``isinstance(...)`` / ``issubclass(...)`` arguments, once `calls_by_name` walked it."""
    return _USED.get(tree)
