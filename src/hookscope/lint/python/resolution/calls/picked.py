"""Classes picked by name from a module: ``getattr(models, cfg.arch)(...)``.

When the module is a project module (imported, or ``importlib.import_module("pkg.models")``)
whose every public top-level callable is a class, and all are modules, whatever name is
picked builds a module; a public function or lower-case name there leaves it unresolved.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import import_origin, imported_file
from hookscope.lint.python.resolution.getattrs import is_getattr
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, Kind, Resolved

_IMPORT_MODULE = ("importlib.import_module", "import_module")
_SHOWN = 3  # candidate names shown in the evidence


def picked_class(ctx: Context, expr: ast.Call, scope: Scope, depth: int) -> Resolved | None:
    """A module, for ``getattr(mod, name)(...)`` when every class ``mod`` offers is one."""
    func = expr.func
    if not (
        is_getattr(func)
        and len(func.args) == 2
        and isinstance(func.args[0], ast.Name)
        and depth < MAX_DEPTH
    ):
        return None
    holder = func.args[0].id
    module = import_origin(ctx, holder, scope) or _loaded(ctx, holder, scope)
    other = imported_file(ctx, module) if module else None
    if other is None:
        return None
    names = _candidates(other, depth)
    if not names:
        return None
    shown = ", ".join(names[:_SHOWN]) + (", ..." if len(names) > _SHOWN else "")
    via = f"getattr({holder}, ...) picks one of the classes of {module} ({shown}), each a module"
    return Resolved(Kind.MODULE, name=names[0], via=via)


def _loaded(ctx: Context, name: str, scope: Scope) -> str:
    """The module ``name`` was loaded as: ``name = importlib.import_module("pkg.mod")``."""
    bindings = ctx.bindings_of(scope.node).get(name) or []
    if len(bindings) != 1 or bindings[0].kind != "value":
        return ""
    value = bindings[0].expr
    if (
        isinstance(value, ast.Call)
        and dotted(value.func) in _IMPORT_MODULE
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Constant)
        and isinstance(value.args[0].value, str)
    ):
        return value.args[0].value
    return ""


def _candidates(other: Context, depth: int) -> list[str]:
    """The public classes of ``other``'s module when they are all modules and it offers
    nothing else callable; ``[]`` otherwise."""
    tree = other.file.tree
    top_names = other.bindings_of(tree)
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):
                return []
        elif isinstance(node, ast.ClassDef):
            if not node.name.startswith("_"):
                if other.class_kind(node.name)[0] is not Kind.MODULE:
                    return []
                names.append(node.name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                shown = alias.asname or alias.name
                if shown.startswith("_") or alias.name == "*":
                    if alias.name == "*":
                        return []
                    continue
                if not shown[:1].isupper():
                    return []
                bound = top_names.get(shown)
                found = other.combine(bound, depth + 1, shown) if bound else None
                if found is None or not found.is_class or found.kind is not Kind.MODULE:
                    return []
                names.append(shown)
    return names
