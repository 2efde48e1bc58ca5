"""Methods that are entry points of their own: run from outside the class as well.

A helper that ``forward`` reaches through ``self`` runs inside ``Module.__call__``; one
that other code also runs directly (``policy.sample_actions(...)``, or by name:
``getattr(model, "sample_actions")``) is entered without it, and there
``self.forward(...)`` skips the hooks. A method is so entered when, in its file or in one
importing its class or module, its name is a string, or is used other than in calls on
``self``/``super()``/a class or on something resolved to another class or plain object.
"""

from __future__ import annotations

import ast
import os
import re

from hookscope.lint.python.resolution.callsites.importers import (
    MAX_IMPORTERS,
    importers,
    module_importers,
)
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import foreign_file
from hookscope.lint.python.resolution.kinds import Kind
from hookscope.lint.python.resolution.signatures import used_here
from hookscope.lint.python.rules.analysis import Analysis

_SELF_LIKE = frozenset({"self", "cls"})


def entered_from_outside(analysis: Analysis, cls: ast.ClassDef, name: str) -> bool:
    """Whether the method ``name`` of ``cls`` is run other than through ``self``."""
    if name.startswith("_"):
        return False  # private by convention: only the class runs it
    key = f"outside:{id(cls)}:{name}"
    cached = analysis.cache.get(key)
    if isinstance(cached, bool):
        return cached
    found = _runs_it(analysis.resolver, cls.name, name) or any(
        _runs_it(other, cls.name, name) for other in _importers(analysis, cls)
    )
    analysis.cache[key] = found
    return found


def _runs_it(resolver: Context, owner: str, name: str) -> bool:
    """Whether the file of ``resolver`` runs the method ``name`` of the class ``owner`` on
    something else than ``self``: the string ``name``, a use of ``x.name`` other than a
    call (handed on), or ``x.name(...)`` with ``x`` not resolved to another kind."""
    text = resolver.file.text
    if name not in text:
        return False
    if re.search(r"['\"]" + re.escape(name) + r"['\"]", text):
        return True
    calls = resolver.calls_named(name)
    if not calls:
        return used_here(resolver, name) and _named_on_other(resolver.file.tree, name)
    for call, scope in calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or _self_like(func.value):
            continue
        receiver = resolver.resolve(func.value, scope)
        if receiver.kind in (Kind.OTHER, Kind.HOOKLESS) or receiver.is_class:
            continue  # a plain object's method so named
        if receiver.cls and receiver.cls != owner:
            continue  # another class's
        return True
    return False


def _named_on_other(tree: ast.Module, name: str) -> bool:
    """``x.name`` with ``x`` not self-like, anywhere in ``tree``."""
    return any(
        isinstance(node, ast.Attribute) and node.attr == name and not _self_like(node.value)
        for node in ast.walk(tree)
    )


def _self_like(node: ast.expr) -> bool:
    """``self``, ``cls``, ``super()``/``super(...)``, ``self.__class__`` or a class name."""
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        node = node.value
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "super"
    return isinstance(node, ast.Name) and (node.id in _SELF_LIKE or node.id[:1].isupper())


def _importers(analysis: Analysis, cls: ast.ClassDef) -> list[Context]:
    """Resolvers of the project files that import ``cls`` or its module by name (none when
    there are too many to read)."""
    index = analysis.resolver.index
    stem = os.path.basename(analysis.file.path).removesuffix(".py")
    files = sorted({*importers(index, cls.name), *module_importers(index, stem)})
    if len(files) > MAX_IMPORTERS:
        return []
    found = [foreign_file(analysis.resolver, where) for where in files]
    return [other for other in found if other is not None]
