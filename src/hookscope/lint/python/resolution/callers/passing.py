"""Given by every caller in this file: ``def check(model)`` is a module when the file calls
``check`` at least once and every call passes a module instance (or an instance of one
plain class: that class). Only calls in the same file count (a name used nowhere else),
and only once the whole file was parsed.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.resolution.callsites.callees import (
    add_passed,
    called_as,
    callee_is,
    calls_here,
    mentioned_twice,
    runs_another,
    skipped,
)
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import SETTLED, Kind, Resolved, agreed
from hookscope.lint.python.resolution.signatures import argument_for, is_none, used_here


def unseen(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """Settled when the calls may be in what a masked parse dropped (and marked missed)."""
    mentioned = mentioned_twice(resolver.file.text, called_as(func, scope))  # not just its def
    if (mentioned or func.name == "__call__") and not resolver.complete:
        resolver.missed = True
        return SETTLED
    return None


def given_here(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """What every call of ``func`` in this file passes, when the file calls or names it;
    settled then, but for a class named here only as a base (``class StepTrainer(Trainer)``),
    whose subclasses' constructions `callers` reads."""
    mentioned, calls = calls_here(resolver, func, scope)
    if not mentioned or not (calls or used_here(resolver, called_as(func, scope))):
        return None
    here = _given_here(resolver, func, scope, name, depth)
    if here is None and func.name == "__init__" and not calls:
        return None
    return here or SETTLED


def _given_here(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """What every call of ``func`` in this file passes to its parameter ``name``."""
    skip = 1 if scope.self_name else 0
    callee = called_as(func, scope)
    calls = resolver.calls_named(callee)
    # (a call of another function of this file so named, a namesake method of another
    # class, runs no ``func``: left out)
    calls = [c for c in calls if not runs_another(resolver, c, func)]
    if not calls or not all(callee_is(resolver, c, func, callee) for c in calls):
        return None  # a call that may be another function's or may run this one unseen
    results: list[tuple[ast.Call, str, Resolved]] = []
    for call, caller in calls:
        passes = skipped(resolver, (call, caller), func, skip)  # ``Base.m(self, model)``
        argument = argument_for(func, passes, call, name)
        if (argument is not None and is_none(argument)) or (
            caller.node is func and isinstance(argument, ast.Name) and argument.id == name
        ):
            continue  # ``None`` reaches no ``.forward``; a recursive call passes the parameter on
        if not add_passed(results, resolver, func, passes, (call, caller), name, depth, True):
            return None  # (``helper(*args)``: what the wrapper's callers pass)
    return agreed(results, "every call", name)


def passed(
    resolver: Context, argument: ast.expr, call: ast.Call, caller: Scope, depth: int
) -> Resolved:
    """What ``argument`` of ``call`` is: resolved, or else a module by the caller's own
    module-only use of it (`evidence`), or else a submodule when it is an attribute of a
    module (the callee's ``.forward(...)`` on it shows it has a ``forward``)."""
    result = resolver.resolve(argument, caller, depth + 1)
    if result.kind is not Kind.UNKNOWN or result.is_class:
        return result
    if isinstance(argument, (ast.Name, ast.Attribute)):
        # ``model.train()`` ... ``self.train_step(model, batch)``: the caller's own use
        used = resolver.used_as_module(argument, caller)
        if used is not None:
            return used
    if not isinstance(argument, ast.Attribute):
        return result
    site = CallSite(call, call, caller, (), None)
    return resolver.submodule(argument, site) or result
