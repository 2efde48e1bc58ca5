"""Declared local variables (PEP 526): ``ctxs: list[LossContext] = []`` gives the name its
type for every assignment in that function, as a type checker reads it. Parameters'
annotations are left to the usual resolution (a caller may pass other values).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.bindings import Binding
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import Kind, Resolved


def declared_type(
    resolver: Context, scope: Scope, bindings: list[Binding] | None, name: str
) -> Resolved | None:
    """What the one declaration ``name: T`` of a function body says ``name`` is, when ``T``
    resolves to a known kind and ``name`` has other bindings too; ``None`` otherwise."""
    func = scope.node
    if not bindings or len(bindings) < 2 or not isinstance(func, Function):
        return None
    args = func.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if name in params or args.vararg is not None and args.vararg.arg == name:
        return None
    declared = [b for b in bindings if b.kind == "annotation" and b.owner is func]
    if len(declared) != 1 or declared[0].expr is None:
        return None
    result = resolver.annotation(declared[0].expr)
    if result.kind is Kind.UNKNOWN and result.elem is None:
        return None
    text = " ".join(ast.unparse(declared[0].expr).split())
    where = f"{resolver.file.path}:{getattr(declared[0].expr, 'lineno', 1)}"
    via = result.via or f"{name}: {text} at {where}, declared for every assignment"
    return replace(result, name=name, via=via)
