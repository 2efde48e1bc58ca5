"""The ``.forward(...)`` calls of a file that the forward rules look at, and where they stand."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from hookscope.lint.engine.findings import Edit
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import CallSite, PyFile, Scope
from hookscope.lint.python.resolution.kinds import Kind
from hookscope.lint.python.rules.analysis import Analysis
from hookscope.lint.python.rules.entry import entry_methods, is_super_call

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


_SCRIPT_DECORATORS = frozenset(
    {"script", "jit.script", "torch.jit.script"}
    | {"script_method", "jit.script_method", "torch.jit.script_method"}
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


def is_self(node: ast.expr, site: CallSite) -> bool:
    return isinstance(node, ast.Name) and node.id == site.scope.self_name


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


def _super_on_self(node: ast.expr, site: CallSite) -> bool:
    """``super(Cls, self)`` in a method: the parent ``forward`` runs on the module itself."""
    return (
        is_super_call(node)
        and len(node.args) == 2  # type: ignore[attr-defined]
        and is_self(node.args[1], site)  # type: ignore[attr-defined]
    )


def self_forward_calls(analysis: Analysis) -> Iterator[tuple[CallSite, ast.Attribute, bool]]:
    """``self.forward(...)`` (or ``super(Cls, self).forward(...)``, as hookless) in methods
    other than their class's entry methods, each with whether the method is an entry only
    through an own ``__call__`` that replaces ``Module.__call__`` (`entry.replaced_call`)."""
    for site, func in forward_calls(analysis):
        scope = site.scope
        if scope.cls is None or scope.method is None:
            continue
        if not is_self(func.value, site) and not _super_on_self(func.value, site):
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
