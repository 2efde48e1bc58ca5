"""Which function of this file a call runs, and what it forwards, for the callers of a parameter.

``self.check(model)`` runs ``check`` of the receiver's class; ``Base.check(self, model)``
runs ``Base``'s own (or inherited) ``check`` with the instance first. A wrapper that hands
its positional arguments on (``helper(x, *args)``) passes to ``helper`` what its own
callers pass at the matching place of ``*args``, when those calls are all seen and agree.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import Kind, Resolved, agreed
from hookscope.lint.python.resolution.methods import find_method, is_classmethod, is_staticmethod
from hookscope.lint.python.resolution.signatures import argument_for, left_none

Site = tuple[ast.Call, Scope]


def unbound_method(resolver: Context, site: Site) -> Function | None:
    """The plain method ``Cls.name(self, ...)`` runs, for a class ``Cls`` of this file
    (not a static or class method, which take no instance); ``None`` for other calls."""
    call, scope = site
    func = call.func
    if not isinstance(func, ast.Attribute) or not call.args:
        return None
    owner = resolver.resolve(func.value, scope)
    if not owner.is_class or owner.name not in resolver.file.classes:
        return None
    found = find_method(resolver, owner.name, func.attr)
    if found is None or found[0] is not resolver:
        return None
    method = found[1]
    return None if is_staticmethod(method) or is_classmethod(method) else method


def callee_is(resolver: Context, site: Site, func: Function, callee: str) -> bool:
    """Whether the call of ``site`` runs ``func`` (named ``callee`` at its calls)."""
    call, scope = site
    found = resolver.resolve(call.func, scope)
    if func.name == "__init__":  # a constructor of this file's class ``callee``
        return found.is_class and found.name == callee and callee in resolver.file.classes
    return found.function is func or unbound_method(resolver, site) is func


def runs_another(resolver: Context, site: Site, func: Function) -> bool:
    """Whether the call of ``site`` (``self.check(model)``, ``Base.check(self, model)``)
    resolves to a method of this file other than ``func`` (a namesake in another class)."""
    call, scope = site
    if func.name == "__init__" or not isinstance(call.func, ast.Attribute):
        return False
    found = resolver.resolve(call.func, scope)
    if found.function is not None:
        return found.function is not func
    unbound = unbound_method(resolver, site)
    return unbound is not None and unbound is not func


def skipped(resolver: Context, site: Site, func: Function, own: int) -> int:
    """How many parameters of ``func`` the call of ``site`` does not pass: ``own`` (the
    instance, for a method), none for an unbound call that passes the instance itself."""
    return 0 if own and unbound_method(resolver, site) is func else own


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
    named = resolver.calls_named(wrapper.name)
    calls = [c for c in named if callee_is(resolver, c, wrapper, wrapper.name)]
    if not calls or len(calls) != len(named):
        return None  # none here, or one that may run another function so named
    own = 1 if scope.self_name else 0
    results = []
    for call, where in calls:
        skip = skipped(resolver, (call, where), wrapper, own)
        index = len([*wrapper.args.posonlyargs, *wrapper.args.args]) - skip + item
        if index >= len(call.args) or any(
            isinstance(a, ast.Starred) for a in call.args[: index + 1]
        ):
            return None
        result = resolver.passed(call.args[index], call, where, depth + 1)
        if result.kind is Kind.UNKNOWN or result.is_class:
            return None
        results.append((call, resolver.file.path, result))
    return agreed(results, f"every call of {wrapper.name}(*args)")


def called_as(func: Function, scope: Scope) -> str:
    """The name calls of ``func`` are written with: its own, or its class's for the
    ``__init__`` of a class of this file (``Runner(net)`` runs ``Runner.__init__``)."""
    if func.name != "__init__":
        return func.name
    return scope.cls.name if scope.cls is not None and scope.method is func else ""


def mentioned_twice(text: str, word: str) -> bool:
    """``text.count(word) >= 2``, reading only up to the second occurrence (its ``def``
    and a call are usually close: a count of the whole file for each parameter would be
    quadratic on a large file)."""
    first = text.find(word)
    return first >= 0 and text.find(word, first + len(word)) >= 0


def calls_here(resolver: Context, func: Function, scope: Scope) -> tuple[bool, list[Site]]:
    """Whether this file names ``func`` (by `called_as`) more than in its ``def``, and its
    calls in this file (none when it is not named)."""
    callee = called_as(func, scope)
    mentioned = mentioned_twice(resolver.file.text, callee)
    return mentioned, resolver.calls_named(callee) if mentioned else []


def add_passed(
    results: list[tuple[ast.Call, str, Resolved]],
    other: Context,
    func: Function,
    skip: int,
    site: Site,
    name: str,
    depth: int,
    varargs: bool = False,
) -> bool:
    """Add to ``results`` what the call of ``site`` (in ``other``) passes to the parameter
    ``name`` of ``func`` (``skip`` parameters not passed; with ``varargs``, through the
    ``*args`` of a wrapper: `through_varargs`), unless it leaves its default ``None`` (that
    call reaches no ``.forward``); ``False`` when that is not known."""
    call, caller = site
    argument = argument_for(func, skip, call, name)
    if argument is None and left_none(func, skip, call, name):
        return True
    if argument is not None:
        found: Resolved | None = other.passed(argument, call, caller, depth)
    else:
        found = through_varargs(other, func, skip, call, caller, name, depth) if varargs else None
    if found is None or found.kind is Kind.UNKNOWN or found.is_class:
        return False
    results.append((call, other.file.path, found))
    return True
