"""Which bindings of a name reach a use: flow within one function, for `Resolver`.

Bindings are collected per scope without order (`bindings`); these helpers drop those
that cannot hold the value at a line: an assignment every path to the use runs hides
those above it, a binding's own value sees the earlier one, and an attribute assigned
several times at the top of ``__init__`` holds its last value in the other methods.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import Binding


def reaching(owner: ast.AST, bindings: list[Binding], line: int) -> list[Binding]:
    """The bindings of a name that can reach its use at ``line`` in the function ``owner``.

    An assignment before the use that every path to it runs (a statement of a block that
    holds the use) hides the bindings above it; those after it (in branches, or later in
    a loop around the use) still reach it. Anywhere else, every binding counts.
    """
    if not isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)) or len(bindings) < 2:
        return bindings
    values = {id(b.expr) for b in bindings if b.expr is not None}
    start = 0
    block: list[ast.stmt] = owner.body
    while block:
        holder = None
        for stmt in block:
            if stmt.lineno > line:
                break
            if (
                isinstance(stmt, (ast.Assign, ast.AnnAssign))
                and stmt.value is not None
                and id(stmt.value) in values
                and (stmt.end_lineno or line) < line
            ):
                start = stmt.lineno  # the last one every path runs, so far
            if line <= (stmt.end_lineno or stmt.lineno):
                holder = stmt
        block = _block_holding(holder, line) if holder is not None else []
    if not start:
        return bindings
    loops = [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(owner)
        if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
        and start < n.lineno <= line <= (n.end_lineno or n.lineno)
    ]

    def reaches(binding: Binding) -> bool:
        at = getattr(binding.expr, "lineno", 0)
        return start <= at < line or any(first <= at <= last for first, last in loops)

    return [b for b in bindings if reaches(b)]


def _block_holding(stmt: ast.stmt, line: int) -> list[ast.stmt]:
    """The statement list of ``stmt`` (a loop, ``if``, ``with`` or ``try``) that holds
    ``line``; ``[]`` for any other statement (a nested function runs later)."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)):
        blocks = [stmt.body, getattr(stmt, "orelse", [])]
    elif isinstance(stmt, ast.Try):
        blocks = [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    else:
        return []
    for block in blocks:
        if block and block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno):
            return block
    return []


def settled(bindings: list[Binding], user: ast.AST | None) -> list[Binding]:
    """The bindings of an instance attribute that outlive the constructor: when all were
    made in one ``__init__`` and the use (in ``user``) is elsewhere, those that `reaching`
    finds at its end (``self.m = []`` ... ``self.m = nn.ModuleList(self.m)``: the last)."""
    init = bindings[0].owner if bindings else None
    if (
        len(bindings) < 2
        or not isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef))
        or init.name != "__init__"
        or user is init
        or any(b.owner is not init for b in bindings)
    ):
        return bindings
    return reaching(init, bindings, (init.end_lineno or init.lineno) + 1)


def in_own_value(binding: Binding, line: int) -> bool:
    """Whether a use at ``line`` lies in the value of ``binding`` itself: in ``model =
    [model]`` or ``x = wrap(x)`` the name on the right is its earlier value."""
    value = binding.expr if binding.kind in ("value", "unpacked") else None
    return value is not None and value.lineno <= line <= (value.end_lineno or value.lineno)


def outside_own_values(bindings: list[Binding], method: ast.AST | None, line: int) -> list[Binding]:
    """``bindings`` of an attribute used at ``line`` of ``method``, less those whose own
    value holds that use: in ``self.net = self.net()`` the right side reads what was
    there before (the method ``net``), not the value being bound."""
    if method is None or not any(b.owner is method for b in bindings):
        return bindings
    return [b for b in bindings if b.owner is not method or not in_own_value(b, line)]


# (``calls._SELF_RETURNING``'s methods that give back the object itself: a module stays one)
_KEEPS_KIND = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double"})


def past_self_rebinds(bindings: list[Binding], name: str) -> list[Binding]:
    """``bindings`` of an outer scope's ``name`` without ``name = name.to(device)`` ones
    (made in a function that declares ``name`` global): they keep what ``name`` held, so
    the others decide; all of them when there are no others."""
    kept = [b for b in bindings if not _self_rebind(b, name)]
    return kept or bindings


def _self_rebind(binding: Binding, name: str) -> bool:
    expr = binding.expr
    return (
        binding.kind == "value"
        and isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _KEEPS_KIND
        and isinstance(expr.func.value, ast.Name)
        and expr.func.value.id == name
    )


def declared_global(func: ast.AST) -> frozenset[str]:
    """The names ``func`` declares ``global`` in its own body (not in nested functions)."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return frozenset()
    names: set[str] = set()
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(
                n
                for n in ast.iter_child_nodes(node)
                if isinstance(n, (ast.stmt, ast.excepthandler, ast.match_case))
            )
    return frozenset(names)
