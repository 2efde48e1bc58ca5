"""Rules about a module calling its own or another's ``forward`` directly: HS102, HS103."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hookscope.lint.engine.findings import Finding
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.kinds import Kind
from hookscope.lint.python.rules.analysis import Analysis, PythonRule, self_names
from hookscope.lint.python.rules.entry import is_super_call, module_mixin, replaced_call
from hookscope.lint.python.rules.sites import (
    drop_forward,
    forward_calls,
    is_self,
    self_forward_calls,
)


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
        for site, func, replaced in self_forward_calls(analysis):
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
                named_super = not is_self(func.value, site)
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


_SUPER_ADVICE = (
    "Call the parent `forward` from this class's own `forward` (or a method it runs), "
    "and `self(...)` here."
)


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
    """``super(type(self), self)`` in a function whose first parameter is named ``self``:
    one installed as the ``forward`` of module classes (``forward = Helper.sp_forward``),
    so the call runs the base ``forward`` on the module itself, like ``super().forward``."""
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


RULES = (SelfForwardRule, SuperOtherRule)
