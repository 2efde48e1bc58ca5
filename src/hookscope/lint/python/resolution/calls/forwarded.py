"""Arguments forwarded through ``*args``: ``def run(*args): return helper(*args)``.

A wrapper that hands its positional arguments on passes to ``helper``'s parameter what
its own callers pass at the matching place: ``run(Net(), batch)`` gives ``helper(model,
batch)`` a module. The wrapper's calls (in its file, and for a module-level function in
the files importing it) must all be seen and agree.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.calls.callees import callee_is, skipped
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved, agreed

Function = ast.FunctionDef | ast.AsyncFunctionDef


def through_varargs(
    resolver: Context,
    func: Function,
    skip: int,
    call: ast.Call,
    caller: Scope,
    name: str,
    depth: int,
) -> Resolved | None:
    """What the parameter ``name`` of ``func`` gets from ``call`` when ``call`` forwards
    the ``*args`` of the function it sits in (``caller``); ``None`` when it does not, or
    when the wrapper's callers cannot all be seen or do not agree."""
    wrapper = caller.node
    if not isinstance(wrapper, (ast.FunctionDef, ast.AsyncFunctionDef)) or not wrapper.args.vararg:
        return None
    params = [p.arg for p in [*func.args.posonlyargs, *func.args.args][skip:]]
    if name not in params:
        return None
    position = params.index(name)
    fixed = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), None)
    if fixed is None or position < fixed:
        return None
    starred = call.args[fixed]
    assert isinstance(starred, ast.Starred)
    if not (isinstance(starred.value, ast.Name) and starred.value.id == wrapper.args.vararg.arg):
        return None
    return _at_vararg(resolver, wrapper, caller, position - fixed, depth)


def _at_vararg(
    resolver: Context, wrapper: Function, scope: Scope, item: int, depth: int
) -> Resolved | None:
    """What every call of ``wrapper`` in this file passes as item ``item`` of its ``*args``."""
    calls = [
        c
        for c in resolver.calls_named(wrapper.name)
        if callee_is(resolver, c, wrapper, wrapper.name)
    ]
    if not calls or len(calls) != len(resolver.calls_named(wrapper.name)):
        return None  # none here, or one that may run another function so named
    own = 1 if scope.self_name else 0
    results = []
    for call, where in calls:
        index = len([*wrapper.args.posonlyargs, *wrapper.args.args]) - skipped(
            resolver, (call, where), wrapper, own
        )
        index += item
        if index >= len(call.args) or any(
            isinstance(a, ast.Starred) for a in call.args[: index + 1]
        ):
            return None
        result = resolver.passed(call.args[index], call, where, depth + 1)
        if result.kind is Kind.UNKNOWN or result.is_class:
            return None
        results.append((call, resolver.file.path, result))
    return agreed(results, f"every call of {wrapper.name}(*args)")
