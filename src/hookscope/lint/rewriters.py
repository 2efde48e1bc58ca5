"""The ``self`` of a function rewriter: ``@REWRITER.register_rewriter('pkg.mod.Cls.method')``
(mmdeploy's style) replaces ``Cls.method`` and receives the ``Cls`` instance as its first
parameter. When ``Cls`` is a module of the project or of a known library, so is that
parameter."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from hookscope.lint import libraries
from hookscope.lint.bindings import dotted
from hookscope.lint.kinds import Kind, Resolved

if TYPE_CHECKING:
    from hookscope.lint.resolve import Resolver

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


def rewriter_self(resolver: Resolver, func: ast.AST, name: str) -> Resolved | None:
    """What the first parameter ``name`` of a rewriter of a module's method is."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [*func.args.posonlyargs, *func.args.args]
    if not params or params[0].arg != name or not func.decorator_list:
        return None
    target = rewritten_method(func)
    owner = target.rpartition(".")[0]
    package, _, cls = owner.rpartition(".")
    if not package or not cls[:1].isupper():
        return None
    known_module = libraries.library_model_class(package, cls)
    if not known_module and (cls in resolver.file.classes or cls in resolver.index):
        known_module = resolver.class_kind(cls)[0] is Kind.MODULE
    if not known_module:
        return None
    return Resolved(Kind.MODULE, name=name, cls=cls, via=f"`{name}` of a rewriter of {target}")
