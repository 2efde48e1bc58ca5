"""Submodules reached through ``getattr(self, "prefix" + name)`` (one head per task,
picked by name). Attributes the prefix matches that `literals.getattr_value` cannot type
are still attributes of a module, so submodules; any that resolves to something else
leaves the call unresolved.
"""

from __future__ import annotations

import ast
from typing import TypeGuard

from hookscope.lint.python.parse.attributes import class_attributes
from hookscope.lint.python.parse.pyfile import CallSite
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.literals import attribute_names


def is_getattr(node: ast.expr) -> TypeGuard[ast.Call]:
    """``getattr(obj, name)`` (or with a default) with ``name`` not a constant."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and not isinstance(node.args[1], ast.Constant)
    )


def picked_submodule(resolver: Context, call: ast.Call, site: CallSite) -> Resolved | None:
    """``getattr(obj, <name>)`` where every attribute ``<name>`` can be (`attribute_names`)
    is a module or, unresolved, a submodule of ``obj``; ``None`` otherwise."""
    obj, name = call.args[0], call.args[1]
    names = attribute_names(resolver, obj, name, site.scope, 0)
    if not names:
        return None
    for attr_name in names:
        attr = ast.copy_location(ast.Attribute(value=obj, attr=attr_name, ctx=ast.Load()), call)
        kind = resolver.resolve(attr, site.scope)
        if kind.is_class or kind.kind not in (Kind.MODULE, Kind.UNKNOWN):
            return None
        if kind.kind is Kind.UNKNOWN and not (
            _plainly_bound(resolver, obj, attr_name, site)
            and resolver.submodule(attr, site) is not None
        ):
            return None
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    via = f"{ast.unparse(call)} is one of {shown}: submodules of `{ast.unparse(obj)}`"
    return Resolved(Kind.MODULE, via=via)


def _plainly_bound(resolver: Context, obj: ast.expr, attr: str, site: CallSite) -> bool:
    """``self.<attr> = value`` statements only, none of whose values is a choice
    (``a if c else b``, ``a or b``): an unresolved one is an untyped object, not a mix of
    kinds. ``setattr(self, f"x_{i}", ...)`` names are left out (their text is no name)."""
    owner = resolver.resolve(obj, site.scope)
    cls = resolver.file.classes.get(owner.cls) if owner.cls and not owner.is_class else None
    if cls is None or not attr.isidentifier():
        return False
    bindings = class_attributes(cls).get(attr, [])
    return bool(bindings) and all(
        b.kind == "value" and not isinstance(b.expr, (ast.IfExp, ast.BoolOp)) for b in bindings
    )
