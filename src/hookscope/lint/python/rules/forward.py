"""Rules about calling ``forward`` directly: HS101, HS102, HS103."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hookscope.lint.engine.findings import Edit, Finding
from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import CallSite, PyFile, Scope
from hookscope.lint.python.resolution.kinds import Kind, Resolved, looks_like_module
from hookscope.lint.python.rules.analysis import Analysis, PythonRule, self_names
from hookscope.lint.python.rules.entry import entry_methods, is_super_call, replaced_call
from hookscope.lint.python.rules.mixins import module_mixin

_DOT_FORWARD = re.compile(r"\s*(?:\\\n\s*)*\.\s*(?:\\\n\s*)*forward")


def forward_calls(analysis: Analysis) -> Iterator[tuple[CallSite, ast.Attribute]]:
    """Every ``<expr>.forward(...)`` call with its ``<expr>.forward`` attribute node."""
    for site in analysis.file.calls:
        func = site.node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            yield site, func


def drop_forward(pyfile: PyFile, func: ast.Attribute) -> tuple[Edit, ...]:
    """The edit turning ``x.forward(a)`` into ``x(a)``; none when comments sit in between."""
    _, _, line, col = pyfile.span(func.value)
    _, _, end_line, end_col = pyfile.span(func)
    if not _DOT_FORWARD.fullmatch(pyfile.segment(line, col, end_line, end_col)):
        return ()
    return (Edit(line, col, end_line, end_col, ""),)


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
        for site, func, replaced in _self_forward_calls(analysis):
            cls = site.scope.cls
            assert cls is not None  # _self_forward_calls yields methods only
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
    """``x.forward(...)`` calls on receivers other than ``self``/``super()``, resolved.

    Class objects are left out: ``Base.forward(self, x)`` and ``Fn.forward(ctx, x)``
    are unbound calls, not hook bypasses.
    """
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
            or _is_self(receiver, site)
            or in_scripting_branch(site)
            or _in_own_forward_hook(receiver, site)
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
    """The unknown-receiver heuristic, except inside TorchScript functions.

    In a ``@torch.jit.script`` function a module interface can only be called through
    ``.forward()`` (``m()`` does not compile), so unresolved receivers there are left alone.
    """
    if in_torchscript(site):
        return False
    return looks_like_module(name, analysis.file.imports_torch)


_SCRIPT_DECORATORS = frozenset(
    {
        "script",
        "jit.script",
        "torch.jit.script",
        "script_method",
        "jit.script_method",
        "torch.jit.script_method",
    }
)


def in_torchscript(site: CallSite) -> bool:
    """Whether the call sits in a function decorated with ``torch.jit.script`` or
    ``torch.jit.script_method`` (a ``ScriptModule`` method): code that is always compiled."""
    scope: Scope | None = site.scope
    while scope is not None:
        for decorator in getattr(scope.node, "decorator_list", []):
            path = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
            if path in _SCRIPT_DECORATORS:
                return True
        scope = scope.parent
    return False


def in_scripting_branch(site: CallSite) -> bool:
    """Whether the call sits under ``if torch.jit.is_scripting():``, TorchScript's own path."""
    line = site.node.lineno
    return any(first <= line <= last for first, last in site.scope.scripting_lines())


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


def _is_self(node: ast.expr, site: CallSite) -> bool:
    return isinstance(node, ast.Name) and node.id == site.scope.self_name


class SelfForwardRule(PythonRule):
    """HS102: ``self.forward(x)`` outside ``forward``/``__call__`` skips the module's own hooks
    (and inside an own ``__call__`` that replaces ``Module.__call__``: see `entry`)."""

    code = "HS102"
    name = "self-forward-call"
    message = (
        "`{receiver}.forward(...)` in `{method}` skips this module's own hooks {why}. {advice}"
    )
    severity = "warning"
    fixable = True

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, func, replaced in _self_forward_calls(analysis):
            cls, method = site.scope.cls, site.scope.method
            assert cls is not None and method is not None  # methods only
            kind, _ = analysis.resolver.class_kind(cls.name)
            resolution = analysis.resolver.class_origin(cls.name)
            if replaced:
                if kind is not Kind.MODULE:
                    continue  # a plain class's (or a mixin's) own ``__call__``: no hooks
                how = "" if method.name == "__call__" else f", which runs `{method.name}`"
                why = f"on every call: its own `__call__`{how} replaces `Module.__call__`, "
                if not replaced_call(cls):  # ``super().__call__`` on its other paths
                    why = (
                        "where its own `__call__` does not run `super().__call__`: that path "
                        "skips `Module.__call__`, "
                    )
                yield analysis.finding(
                    type(self),
                    site.node,
                    resolution=resolution,
                    receiver=analysis.source(func.value),
                    method=method.name,
                    why=why + "which runs them",
                    advice="Remove the `__call__` override (`Module.__call__` runs `forward`) "
                    "or call `super().__call__(...)` there.",
                )
                continue
            if kind is Kind.OTHER and (users := module_mixin(analysis.resolver, cls.name)):
                kind = Kind.MODULE
                resolution += f", a mixin that only modules subclass ({', '.join(users[:3])})"
            if kind is Kind.MODULE:
                named_super = not _is_self(func.value, site)
                yield analysis.finding(
                    type(self),
                    site.node,
                    # ``super(Cls, self)``: ``self(...)`` would run this class's own forward
                    edits=() if named_super else drop_forward(analysis.file, func),
                    resolution=resolution,
                    receiver=analysis.source(func.value),
                    method=method.name,
                    why=f"whenever `{method.name}` is the entry point",
                    advice=_SUPER_ADVICE if named_super else "Call `self(...)` instead.",
                )


_COMPILER_TESTS = ("is_tracing", "is_scripting", "is_compiling", "_is_fx_tracing")


def _under_compiler_test(method: ast.AST, call: ast.AST) -> bool:
    """Whether ``call`` sits under an ``if`` that asks whether torch is tracing, scripting
    or compiling (``if torch.jit.is_tracing(): return self.forward(x)``): the path a
    tracer takes, where hooks are not run anyway."""
    for node in ast.walk(method):
        if (
            isinstance(node, ast.If)
            and any(t in ast.unparse(node.test) for t in _COMPILER_TESTS)
            and any(call is inner for stmt in node.body for inner in ast.walk(stmt))
        ):
            return True
    return False


_SUPER_ADVICE = (
    "Call the parent `forward` from this class's own `forward` (or a method it runs), "
    "and `self(...)` here."
)


def _super_on_self(node: ast.expr, site: CallSite) -> bool:
    """``super(Cls, self)`` in a method: the parent ``forward`` runs on the module itself."""
    return (
        is_super_call(node)
        and len(node.args) == 2  # type: ignore[attr-defined]
        and _is_self(node.args[1], site)  # type: ignore[attr-defined]
    )


def _self_forward_calls(analysis: Analysis) -> Iterator[tuple[CallSite, ast.Attribute, bool]]:
    """``self.forward(...)`` (or ``super(Cls, self).forward(...)``: the parent's ``forward``,
    run on the module without its hooks just the same) in methods other than the entry
    methods of their class, each
    with whether the method is an entry only through an own ``__call__`` that replaces
    ``Module.__call__`` (`entry.replaced_call`)."""
    for site, func in forward_calls(analysis):
        scope = site.scope
        if scope.cls is None or scope.method is None:
            continue
        if not _is_self(func.value, site) and not _super_on_self(func.value, site):
            continue
        name = scope.method.name
        replaced = False
        if name in entry_methods(analysis, scope.cls):
            # an own ``__call__`` that runs ``super().__call__`` on one path and
            # ``self.forward`` on another: that path skips the hooks
            if name in entry_methods(analysis, scope.cls, own_call=False) and (
                name != "__call__" or _under_compiler_test(scope.method, site.node)
            ):
                continue
            replaced = True
        if in_scripting_branch(site) or in_torchscript(site):
            continue  # compiled TorchScript, where ``.forward()`` is the required form
        kind, _ = analysis.resolver.class_kind(scope.cls.name)
        if kind is Kind.MODULE or kind is Kind.UNKNOWN:
            analysis.unsure()  # the entry-method closure needs every method
        yield site, func, replaced


class SuperOtherRule(PythonRule):
    """HS103: ``super(Cls, other).forward(x)`` runs ``other``'s parent forward without hooks."""

    code = "HS103"
    name = "super-forward-on-other"
    message = (
        "`super({cls}, {other}).forward(...)` runs a parent `forward` on `{other}`, which is not "
        "`self`, so `{other}`'s hooks are skipped. Call `{other}(...)`, or use `self`."
    )
    severity = "error"

    def check(self, analysis: Analysis) -> Iterator[Finding]:
        for site, func in forward_calls(analysis):
            receiver = func.value
            if not is_super_call(receiver) or len(receiver.args) != 2:  # type: ignore[attr-defined]
                continue
            cls_arg, other = receiver.args  # type: ignore[attr-defined]
            if isinstance(other, ast.Name) and other.id in self_names(site.scope):
                continue
            if _own_type_on_self(site.scope, cls_arg, other) or _installed_on(
                analysis, site.scope, cls_arg, other
            ):
                continue
            yield analysis.finding(
                type(self), site.node, cls=analysis.source(cls_arg), other=analysis.source(other)
            )


def _installed_on(analysis: Analysis, scope: Scope, cls_arg: ast.expr, other: ast.expr) -> bool:
    """``super(Cls, self)`` in a module-level function that the file installs as a method
    of ``Cls`` (``Cls.forward = new_forward``, a patch of a library class): ``self`` is
    the first parameter, an instance of ``Cls``, so the call runs the base ``forward`` on
    the module itself, like ``super().forward`` in ``Cls``."""
    node = scope.node
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or scope.cls is not None:
        return False
    args = [*node.args.posonlyargs, *node.args.args]
    if not (args and isinstance(other, ast.Name) and other.id == args[0].arg):
        return False
    owner = dotted(cls_arg)
    for stmt in analysis.file.tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Name)
            and stmt.value.id == node.name
            and any(
                isinstance(t, ast.Attribute) and owner is not None and dotted(t.value) == owner
                for t in stmt.targets
            )
        ):
            return True
    return False


def _own_type_on_self(scope: Scope, cls_arg: ast.expr, other: ast.expr) -> bool:
    """``super(type(self), self)`` in a function whose first parameter is named ``self``.

    Such a function (often a ``@staticmethod`` of a helper class) is installed as the
    ``forward`` of module classes (``forward = Helper.sp_forward``); the call runs the base
    ``forward`` on the module itself, like ``super().forward``.
    """
    if not (isinstance(other, ast.Name) and other.id == "self"):
        return False
    if not (
        isinstance(cls_arg, ast.Call)
        and dotted(cls_arg.func) == "type"
        and len(cls_arg.args) == 1
        and isinstance(cls_arg.args[0], ast.Name)
        and cls_arg.args[0].id == "self"
    ):
        return False
    node = scope.node
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = [*node.args.posonlyargs, *node.args.args]
    return bool(args) and args[0].arg == "self"


RULES = (ForwardCallRule, GuessedForwardCallRule, SelfForwardRule, SuperOtherRule)
