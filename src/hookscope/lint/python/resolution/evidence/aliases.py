"""Simple aliases: ``_model = model`` (or ``mdl = self.mdl``) and then ``_model.forward(x)``.
An alias bound only to another name is a module when the scope that binds it calls a
module-only method on that name (``model.eval()``; `evidence.used_as_module`).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved


def alias_used_as_module(resolver: Context, receiver: ast.expr, scope: Scope) -> Resolved | None:
    """``receiver``, a name bound (in its scope or one around it) only to one other plain
    name (``_model = model`` in each branch) that the binding scope uses as a module."""
    if not isinstance(receiver, ast.Name):
        return None
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
                used = resolver.used_as_module(value, current)
                if used is None or used.kind is not Kind.MODULE:
                    return None
                via = f"{receiver.id} = {value.id}, and {used.via}"
                return Resolved(Kind.MODULE, name=receiver.id, via=via)
        current = current.parent
    return None


def attribute_alias(resolver: Context, receiver: ast.expr, site: CallSite) -> Resolved | None:
    """``receiver``, a name every binding of which in its function is the same attribute
    chain (``mdl = self.mdl``, ``kg, mdl = self.kg, self.mdl``): what the code around
    says of that attribute (``self.mdl`` of a module is a submodule) holds for the name."""
    if not isinstance(receiver, ast.Name):
        return None
    bindings = resolver.bindings_of(site.scope.node).get(receiver.id, [])
    if not bindings or any(
        b.kind != "value" or not isinstance(b.expr, ast.Attribute) for b in bindings
    ):
        return None
    value = bindings[0].expr
    if len({ast.dump(b.expr) for b in bindings if b.expr is not None}) != 1 or value is None:
        return None
    if dotted(value) is None:
        return None  # only ``a.b.c`` chains: a call's attribute is another value each time
    found = resolver.evidence(value, site)
    if found is None or found.kind is not Kind.MODULE:
        return None
    shown = ast.unparse(value)
    return replace(found, name=receiver.id, via=f"{receiver.id} = {shown}, {found.via}")
