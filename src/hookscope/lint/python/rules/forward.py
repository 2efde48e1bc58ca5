"""Rules about calling another module's ``forward`` directly: HS101, HS104 (a guess)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hookscope.lint.engine.findings import Finding
from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import CallSite
from hookscope.lint.python.resolution.kinds import Kind, Resolved, looks_like_module
from hookscope.lint.python.rules.analysis import Analysis, PythonRule
from hookscope.lint.python.rules.entry import is_super_call
from hookscope.lint.python.rules.sites import (
    drop_forward,
    forward_calls,
    in_scripting_branch,
    in_torchscript,
    is_self,
    self_forward_calls,
)


class ForwardCallRule(PythonRule):
    """HS101: ``module.forward(x)`` skips that module's hooks."""

    code = "HS101"
    name = "direct-forward-call"
    message = (
        "`{receiver}.forward(...)` skips every hook on `{receiver}` ({how}): hooks run only "
        "when a module is called. Call `{receiver}(...)` instead."
    )
    severity = "error"
    fixable = True

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, func, resolved in receivers(analysis):
            if resolved.kind is not Kind.MODULE:
                continue
            how = f"resolved: {resolved.via}" if resolved.via else "a torch module"
            receiver = analysis.source(func.value)
            yield analysis.finding(
                type(self),
                site.node,
                edits=drop_forward(analysis.file, func),
                resolution=resolved.via,
                receiver=receiver,
                how=how,
            )


class GuessedForwardCallRule(PythonRule):
    """HS104: a ``.forward(...)`` call that may skip hooks (receiver type guessed)."""

    code = "HS104"
    name = "possible-hook-bypass"
    message = (
        "`{receiver}.forward(...)` may skip hooks: {why}, so it is assumed to be a module "
        "({guess}). If it is one, call `{receiver}(...)`; this guess is never fixed automatically."
    )
    severity = "warning"
    default = False

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, func, resolved in receivers(analysis):
            if resolved.kind is Kind.UNKNOWN and _heuristic_applies(resolved.name, site, analysis):
                yield self._guess(analysis, site, func.value, "its type was not resolved")
        for site, func, replaced in self_forward_calls(analysis):
            cls = site.scope.cls
            assert cls is not None  # self_forward_calls yields methods only
            if replaced:
                continue  # only a module's own ``__call__`` replaces its hooks
            kind, _ = analysis.resolver.class_kind(cls.name)
            if kind is Kind.UNKNOWN and analysis.resolver.class_looks_like_module(cls):
                why = f"the bases of `{cls.name}` were not resolved"
                yield self._guess(analysis, site, func.value, why)

    def _guess(self, analysis: Analysis, site: CallSite, receiver: ast.expr, why: str) -> Finding:
        name = analysis.resolver.resolve(receiver, site.scope).name or analysis.source(receiver)
        guess = (
            f"the name `{name}` reads like one"
            if known.MODULE_NAME.search(name)
            else "the file uses torch"
        )
        return analysis.finding(
            type(self),
            site.node,
            confidence="guess",
            resolution=f"guessed: {guess}",
            receiver=analysis.source(receiver),
            why=why,
            guess=guess,
        )


def receivers(analysis: Analysis) -> Iterator[tuple[CallSite, ast.Attribute, Resolved]]:
    """``x.forward(...)`` calls on receivers other than ``self``, ``super()`` and RPC proxies,
    resolved; not on classes (``Base.forward(self, x)``, ``Fn.forward(ctx, x)`` are unbound
    calls)."""
    key = "receivers"
    cached = analysis.cache.get(key)
    if isinstance(cached, list):
        yield from cached
        return
    found = []
    for site, func in forward_calls(analysis):
        receiver = func.value
        if (
            is_super_call(receiver)
            or is_self(receiver, site)
            or in_scripting_branch(site)
            or _in_own_forward_hook(receiver, site)
            # ``rref.rpc_sync()``: an RPC proxy, which runs ``forward`` on the RRef's owner
            or getattr(getattr(receiver, "func", None), "attr", "") in known.RREF_PROXY
        ):
            continue
        resolved = analysis.resolver.resolve(receiver, site.scope)
        if resolved.is_class:
            continue
        if resolved.kind is Kind.UNKNOWN:
            resolved = analysis.resolver.evidence(receiver, site) or resolved
        if resolved.kind is Kind.UNKNOWN:
            analysis.unsure()
        found.append((site, func, resolved))
    analysis.cache[key] = found
    yield from found


def _heuristic_applies(name: str, site: CallSite, analysis: Analysis) -> bool:
    """The unknown-receiver heuristic, except in ``@torch.jit.script`` functions, where a
    module interface can only be called through ``.forward()`` (``m()`` does not compile)."""
    if in_torchscript(site):
        return False
    return looks_like_module(name, analysis.file.imports_torch)


_FORWARD_HOOK_REGISTRARS = frozenset({"register_forward_pre_hook", "register_forward_hook"})


def _in_own_forward_hook(receiver: ast.expr, site: CallSite) -> bool:
    """Whether the call sits in a function that the enclosing function registers as a
    forward (pre-)hook of ``receiver`` itself (``m.register_forward_pre_hook(fn)``; or the
    hook's own module parameter): calling ``receiver(...)`` there would run the hook again."""
    func, parent = site.scope.node, site.scope.parent
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    if not isinstance(func, functions) or parent is None or not isinstance(parent.node, functions):
        return False  # only a nested function can be registered by its bare name
    spelled = dotted(receiver)
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    for node in ast.walk(parent.node):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _FORWARD_HOOK_REGISTRARS
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == func.name
            and spelled is not None
            and spelled in (dotted(node.func.value), params[0] if params else None)
        ):
            return True
    return False


RULES = (ForwardCallRule, GuessedForwardCallRule)
