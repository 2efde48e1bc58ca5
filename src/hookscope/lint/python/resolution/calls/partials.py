"""Parameters bound by ``functools.partial``: ``partial(_gradient, implicit_function)``."""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.callsites.callees import called_as, calls_here
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import SETTLED, Kind, Resolved
from hookscope.lint.python.resolution.signatures import argument_for, used_here


def bound_by_partials(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """A parameter of a function (no method) this file names but never calls: what every
    ``partial(func, value, ...)`` binds to it, when they all bind the same kind; settled."""
    if scope.self_name:
        return None
    mentioned, calls = calls_here(resolver, func, scope)
    if not mentioned or calls or not used_here(resolver, called_as(func, scope)):
        return None
    return _bound(resolver, func, name, depth) or SETTLED


def _bound(resolver: Context, func: Function, name: str, depth: int) -> Resolved | None:
    partials = [
        (call, caller)
        for call, caller in resolver.calls_named("partial")
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == func.name
    ]
    if not partials:
        return None
    uses = sum(isinstance(n, ast.Name) and n.id == func.name for n in ast.walk(resolver.file.tree))
    if uses != len(partials):
        return None  # also called or handed on some other way
    results = []
    for call, caller in partials:
        bound = ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)
        argument = argument_for(func, 0, bound, name)
        if argument is None:
            return None
        # (resolved, or a module by the binding function's own use: ``model.parameters()``)
        result = resolver.passed(argument, call, caller, depth)
        if result.kind is Kind.UNKNOWN or result.is_class:
            return None
        results.append(result)
    if len({(r.kind, r.container, r.elem) for r in results}) != 1:
        return None
    where = f"{resolver.file.path}:{partials[0][0].lineno}"
    return replace(results[0], name=name, via=f"partial({func.name}, ...) binds it at {where}")
