"""Which function of this file a call runs, for the callers of a parameter (`passing`).

``self.check(model)`` runs ``check`` of the receiver's class; ``Base.check(self, model)``,
an unbound call through a class of the file, runs ``Base``'s own ``check`` (or the one
it inherits) with the instance passed first, so its arguments sit one place later.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.methods import find_method, is_classmethod, is_staticmethod

Function = ast.FunctionDef | ast.AsyncFunctionDef
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
