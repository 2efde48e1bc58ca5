"""The ``self`` of functions that replace a class's method from outside it.

A function rewriter (``@REWRITER.register_rewriter('pkg.mod.Cls.method')``, mmdeploy's
style) or a function patched in (``Cls.forward = fn``) receives the ``Cls`` instance first:
when ``Cls`` is a module of the project or of a known library, so is that parameter.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved

_REGISTRARS = ("register_rewriter",)


def rewritten_method(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``pkg.mod.Cls.method`` that a decorator says ``func`` rewrites; ``""`` if none."""
    for decorator in func.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        if not (dotted(decorator.func) or "").endswith(_REGISTRARS):
            continue
        named = [k.value for k in decorator.keywords if k.arg == "func_name"]
        for value in [*decorator.args[:1], *named]:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    return ""


def rewriter_self(resolver: Context, scope: Scope, name: str) -> Resolved | None:
    """What the first parameter ``name`` of a function that replaces a module's method is
    (a rewriter, or a function patched onto the class); ``None`` if it is no such one."""
    func = scope.node
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or scope.cls is not None:
        return None
    params = [*func.args.posonlyargs, *func.args.args]
    if not params or params[0].arg != name:
        return None
    if scope.parent is not None:
        patched = _patched_onto(resolver, func.name, scope.parent)
        if patched is not None:
            return replace(patched, name=name)
    if not func.decorator_list:
        return None
    target = rewritten_method(func)
    owner = target.rpartition(".")[0]
    package, _, cls = owner.rpartition(".")
    if not package or not cls[:1].isupper():
        return None
    known_module = resolver.class_kind(cls, package)[0] is Kind.MODULE
    if not known_module and (cls in resolver.file.classes or cls in resolver.index):
        known_module = resolver.class_kind(cls)[0] is Kind.MODULE
    if not known_module:
        return None
    return Resolved(Kind.MODULE, name=name, cls=cls, via=f"`{name}` of a rewriter of {target}")


def _patched_onto(resolver: Context, func_name: str, outer: Scope) -> Resolved | None:
    """An instance of the module class that a statement of ``outer``'s own body (not
    nested ones) assigns the function ``func_name`` to: ``Cls.forward = func_name``."""
    for stmt in resolver.file.body_by_name(outer.node).get(func_name, ()):
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            if not isinstance(target, ast.Attribute):
                continue
            owner = resolver.resolve(target.value, outer, 1)
            if owner.is_class and owner.kind is Kind.MODULE:
                via = f"patched onto {ast.unparse(target)} at {resolver.file.path}:{stmt.lineno}"
                return Resolved(Kind.MODULE, cls=owner.name, via=via)
    return None
