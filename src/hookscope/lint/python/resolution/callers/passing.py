"""Given by every caller: an unannotated parameter from what the calls of its function pass.

``def check(model)`` is a module when the file calls ``check`` at least once and every
call passes a value that resolves to a module instance (an instance of one plain class:
that class, whose attributes then resolve). Only calls in the same file count (a name
used nowhere else), and only once the whole file was parsed; a function the file never
calls is asked of the callers in other files (`callers`), of the instances of its class
(`instances`), of ``Function.apply`` (`autograd`) and of ``register_*_hook`` (`registered`).
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.resolution.callers.autograd import applied
from hookscope.lint.python.resolution.callers.callers import given_in_other_files
from hookscope.lint.python.resolution.callers.instances import (
    given_to_forward,
    given_to_instances,
    given_to_method,
)
from hookscope.lint.python.resolution.calls.callees import callee_is, runs_another, skipped
from hookscope.lint.python.resolution.calls.forwarded import through_varargs
from hookscope.lint.python.resolution.calls.partials import bound_by_partials
from hookscope.lint.python.resolution.calls.registered import hooked_module
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved, agreed
from hookscope.lint.python.resolution.methods import is_staticmethod
from hookscope.lint.python.resolution.signatures import (
    argument_for,
    is_none,
    left_none,
    used_here,
)

Function = ast.FunctionDef | ast.AsyncFunctionDef


def given_by_callers(resolver: Context, func: Function, name: str, depth: int) -> Resolved | None:
    """The unannotated parameter ``name`` of ``func``: what every call passes, when the
    calls all pass the same kind (a module, or instances of one plain class)."""
    scope = resolver.file.scopes.get(id(func))
    callee = _called_as(func, scope)
    if scope is None or not callee:
        return None
    mentioned = _mentioned_twice(resolver.file.text, callee)  # more than its ``def``
    if (mentioned or callee == "__call__") and not resolver.complete:
        resolver.missed = True  # the calls may be in what a masked parse dropped
        return None
    if callee == "__call__":  # ``wrapper(embedding)``: calls of the class's instances
        return given_to_instances(resolver, func, scope, name, depth)
    if hooked := hooked_module(resolver, func, scope, name):  # ``register_*_hook(fn)``
        return hooked
    if callee == "forward" and (
        found := given_to_forward(resolver, func, scope, name, depth)
        or applied(resolver, func, scope, name, depth)  # ``Fn.apply(x, layer)``
    ):
        return found
    calls = resolver.calls_named(callee) if mentioned else []
    if calls and scope.self_name and all(runs_another(resolver, c, func) for c in calls):
        # ``DiscLoss.get_loss(self, net)`` in an override: this method runs from elsewhere
        return given_to_method(resolver, func, scope, name, depth)
    if mentioned and (calls or used_here(resolver, callee)):
        here = _given_here(resolver, func, scope, callee, name, depth)
        if here is not None or func.name != "__init__" or calls:
            return here
        # ``class Trainer`` named here only as a base (``class StepTrainer(Trainer)``):
        # its subclasses' constructions, here and elsewhere (`constructors`)
    # Neither called nor used in this file (its docstring may say its name): the calls
    # are in other files.
    if (scope.self_name or is_staticmethod(func)) and func.name != "__init__":
        return given_to_method(resolver, func, scope, name, depth)
    return given_in_other_files(resolver, func, scope, name, depth)


def _given_here(
    resolver: Context, func: Function, scope: Scope, callee: str, name: str, depth: int
) -> Resolved | None:
    """What every call of ``func`` in this file passes to its parameter ``name``."""
    skip = 1 if scope.self_name else 0
    calls = resolver.calls_named(callee)
    if not calls and not skip:
        return bound_by_partials(resolver, func, name, depth)
    # (a call of another function of this file so named, a namesake method of another
    # class, runs no ``func``: left out)
    calls = [c for c in calls if not runs_another(resolver, c, func)]
    if not calls or not all(callee_is(resolver, c, func, callee) for c in calls):
        return None  # a call that may be another function's or may run this one unseen
    results = []
    for call, caller in calls:
        passes = skipped(resolver, (call, caller), func, skip)  # ``Base.m(self, model)``
        argument = argument_for(func, passes, call, name)
        if argument is None or is_none(argument):
            if left_none(func, passes, call, name) or is_none(argument):
                continue  # ``None`` there: that call never reaches a ``.forward``
            forwarded = through_varargs(resolver, func, passes, call, caller, name, depth)
            if forwarded is None:
                return None
            results.append((call, resolver.file.path, forwarded))  # ``helper(*args)``
            continue
        if caller.node is func and isinstance(argument, ast.Name) and argument.id == name:
            continue  # a recursive call passes the parameter on
        result = passed(resolver, argument, call, caller, depth)
        if result.kind is Kind.UNKNOWN or result.is_class:
            return None
        results.append((call, resolver.file.path, result))
    return agreed(results, "every call", name)


def _called_as(func: Function, scope: Scope | None) -> str:
    """The name calls of ``func`` are written with: its own, or its class's for the
    ``__init__`` of a class of this file (``Runner(net)`` runs ``Runner.__init__``)."""
    if func.name != "__init__":
        return func.name
    if scope is None or scope.cls is None or scope.method is not func:
        return ""
    return scope.cls.name


def passed(
    resolver: Context, argument: ast.expr, call: ast.Call, caller: Scope, depth: int
) -> Resolved:
    """What ``argument`` of ``call`` is: resolved; or else a module by the caller's own
    module-only use of it (``model.parameters()`` in the calling function, `evidence`); or
    else an attribute of a module (``self.encoder`` of an ``nn.Module``), which the callee's
    ``.forward(...)`` on it shows to have a ``forward``: a submodule, as `evidence` reads
    ``self.encoder.forward(x)``."""
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


def _mentioned_twice(text: str, word: str) -> bool:
    """``text.count(word) >= 2``, reading only up to the second occurrence (its ``def``
    and a call are usually close: a count of the whole file for each parameter would be
    quadratic on a large file)."""
    first = text.find(word)
    return first >= 0 and text.find(word, first + len(word)) >= 0
