"""Simple aliases: ``_model = model`` and then ``_model.forward(x)`` (in a lambda, say).

An alias bound only to another name holds what that name held there: when the scope
that binds the alias calls a module-only method on the aliased name
(``model.eval()``), the alias is a module too (`evidence.used_as_module`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from hookscope.lint.kinds import Kind, Resolved

if TYPE_CHECKING:
    from hookscope.lint.pyfile import Scope
    from hookscope.lint.resolve import Resolver


def alias_used_as_module(resolver: Resolver, receiver: ast.expr, scope: Scope) -> Resolved | None:
    """``receiver``, a name bound (in its scope or one around it) only to one other plain
    name (``_model = model`` in each branch) that the binding scope uses as a module."""
    if not isinstance(receiver, ast.Name):
        return None
    from hookscope.lint.evidence import used_as_module  # (evidence imports this module)

    current: Scope | None = scope
    while current is not None:
        if not isinstance(current.node, ast.ClassDef):
            bindings = resolver.bindings_of(current.node).get(receiver.id)
            if bindings:
                values = {b.expr.id for b in bindings if isinstance(b.expr, ast.Name)}
                if len(values) != 1 or any(b.kind != "value" for b in bindings):
                    return None  # bound to anything but one other name
                value = bindings[0].expr
                if not isinstance(value, ast.Name) or value.id == receiver.id:
                    return None
                used = used_as_module(resolver, value, current)
                if used is None or used.kind is not Kind.MODULE:
                    return None
                return Resolved(
                    Kind.MODULE,
                    name=receiver.id,
                    via=f"{receiver.id} = {value.id}, and {used.via}",
                )
        current = current.parent
    return None
