"""Attributes built from a table of plain classes: ``self.task = instantiate(registry,
cfg)`` with ``registry = {"base": BaseTask}`` (here or imported), every entry a plain
project class, builds one of them, not a submodule (`evidence.submodule`).
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.attributes import class_attributes
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind
from hookscope.lint.python.resolution.literals import Display, module_display, named_display


def self_attribute_calls(
    value: ast.expr, name: str, scope: Scope
) -> list[tuple[ast.Call, ast.AST]] | None:
    """``value.<name>`` where ``value`` is the method's ``self``: every assignment of
    ``self.<name>`` in the class, each a call, with the scope node it is in; ``None`` when
    there is none or one is not a call."""
    if not (isinstance(value, ast.Name) and value.id == scope.self_name and scope.cls):
        return None
    bindings = class_attributes(scope.cls).get(name, [])
    calls = [
        (binding.expr, binding.owner)
        for binding in bindings
        if binding.kind == "value" and isinstance(binding.expr, ast.Call)
    ]
    return calls if calls and len(calls) == len(bindings) else None


def from_plain_tables(resolver: Context, value: ast.expr, name: str, scope: Scope) -> bool:
    """Every assignment of ``self.<name>`` in the class is a call that is handed a table
    of plain classes (see the module docstring)."""
    calls = self_attribute_calls(value, name, scope)
    return calls is not None and all(
        any(_plain_table(resolver, arg, resolver.scope_of(owner)) for arg in call.args)
        for call, owner in calls
    )


def _plain_table(resolver: Context, arg: ast.expr, scope: Scope) -> bool:
    found = _display(resolver, arg, scope)
    if found is None:
        return False
    owner, literal, node = found
    entries = literal.values if isinstance(literal, ast.Dict) else literal.elts
    if not entries or (isinstance(literal, ast.Dict) and None in literal.keys):
        return False
    where = owner.scope_of(node)
    for entry in entries:
        if not isinstance(entry, (ast.Name, ast.Attribute)):
            return False
        made = owner.resolve(entry, where)
        if not made.is_class or made.kind is not Kind.OTHER:
            return False
    return True


def _display(resolver: Context, arg: ast.expr, scope: Scope) -> Display | None:
    """The display ``arg`` names: a name (`named_display`) or ``module.name`` of a project
    module imported as ``module``."""
    if isinstance(arg, ast.Name):
        return named_display(resolver, arg, scope)
    if not (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)):
        return None
    bindings = resolver.bindings_of(resolver.file.tree).get(arg.value.id, [])
    if len(bindings) != 1 or bindings[0].kind != "import":
        return None
    return module_display(resolver, bindings[0].origin, arg.attr)
