"""Every resolution strategy (see `context`), registered in the order the resolver asks
them. A strategy answers a `Resolved`, ``None`` (ask the next) or `kinds.SETTLED`
(unresolved: ask no further), and imports no other strategy module (callers/, calls/,
values/, evidence/). The resolver imports this module only; for each question it walks
one list, and the first answer wins.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hookscope.lint.python.facts.libraries import other_framework_file
from hookscope.lint.python.parse.bindings import Binding, lambda_default
from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.resolution.callers.autograd import applied, saved_on_ctx
from hookscope.lint.python.resolution.callers.callers import given_in_other_files
from hookscope.lint.python.resolution.callers.instances import (
    given_to_forward,
    given_to_instances,
    given_to_method,
)
from hookscope.lint.python.resolution.callers.passing import given_here, unseen
from hookscope.lint.python.resolution.callers.passing import passed as passed
from hookscope.lint.python.resolution.calls.calls import call_result, entered
from hookscope.lint.python.resolution.calls.library_attributes import library_attribute
from hookscope.lint.python.resolution.calls.partials import bound_by_partials
from hookscope.lint.python.resolution.calls.picked import picked_class
from hookscope.lint.python.resolution.calls.registered import hooked_module
from hookscope.lint.python.resolution.calls.rewriters import rewriter_self
from hookscope.lint.python.resolution.callsites.callees import called_as
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import fixture
from hookscope.lint.python.resolution.evidence.aliases import alias_used_as_module, attribute_alias
from hookscope.lint.python.resolution.evidence.evidence import in_submodule, used_by_siblings
from hookscope.lint.python.resolution.evidence.evidence import submodule as submodule
from hookscope.lint.python.resolution.evidence.evidence import used_as_module as used_as_module
from hookscope.lint.python.resolution.evidence.keyed import keyed_entry, picked_by_name
from hookscope.lint.python.resolution.kinds import SETTLED, Resolved
from hookscope.lint.python.resolution.signatures import says_nothing, unpacked
from hookscope.lint.python.resolution.values.containers import COLLECTIONS, branches, collection
from hookscope.lint.python.resolution.values.containers import element as element
from hookscope.lint.python.resolution.values.declared import declared_type
from hookscope.lint.python.resolution.values.holders import appended, holder_items
from hookscope.lint.python.resolution.values.narrowing import narrowed_here
from hookscope.lint.python.resolution.values.subscripts import subscript

Expression = Callable[[Context, Any, Scope, int], Resolved]
Named = Callable[[Context, Scope, "list[Binding] | None", str, int], "Resolved | None"]
Parameter = Callable[[Context, Scope, str, int], "Resolved | None"]
Bound = Callable[[Context, Binding, Scope, int], "Resolved | None"]
Attribute = Callable[[Context, ast.Attribute, Scope, int], "Resolved | None"]
Narrowing = Callable[[Context, ast.expr, Scope], "Resolved | None"]
Evidence = Callable[[Context, ast.expr, CallSite], "Resolved | None"]
Given = Callable[[Context, Function, Scope, str, int], "Resolved | None"]


# -- parameters whose own binding says nothing: what is passed -------------------
def _own_parameter(scope: Scope, name: str) -> Function | None:
    """The function of ``scope`` when ``name`` is one of its (non-star) parameters."""
    func = scope.node
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    return func if name in params else None


def _lambda_default(ctx: Context, scope: Scope, name: str, depth: int) -> Resolved | None:
    """``lambda r=renderer: r.forward(x)``: the default, resolved where the lambda is."""
    if not isinstance(scope.node, ast.Lambda):
        return None
    default = lambda_default(scope.node, name)
    return None if default is None else ctx.resolve(default, scope.parent or scope, depth + 1)


def _rewritten(ctx: Context, scope: Scope, name: str, depth: int) -> Resolved | None:
    return rewriter_self(ctx, scope, name) if _own_parameter(scope, name) else None


_INFERRING: set[tuple[int, str]] = set()  # parameters being inferred, to cut recursion


# What the calls of a function pass to its unannotated parameter (a module when they all
# pass modules, or instances of one plain class).
CALLERS: list[Given] = [
    unseen,  # settled when the calls may be in what a masked parse dropped
    given_to_instances,  # ``wrapper(embedding)``: a ``__call__``'s, from the instances' calls
    lambda ctx, func, scope, name, depth: hooked_module(ctx, func, scope, name),  # a hook's
    given_to_forward,  # ``layer(x, embedding=emb)`` runs ``forward``
    applied,  # ``Fn.apply(x, layer)`` runs an autograd ``forward``
    given_to_method,  # ``self.check(model)`` in the files importing its class
    bound_by_partials,  # ``partial(_gradient, implicit_function)``
    given_here,  # every call in this file (`passing`)
    given_in_other_files,  # every call (or construction) in the files importing it
]


def _given(ctx: Context, scope: Scope, name: str, depth: int) -> Resolved | None:
    func = _own_parameter(scope, name)
    key = (id(func), name)
    if func is None or key in _INFERRING:
        return None  # (a recursive call passes the parameter on)
    own = ctx.file.scopes.get(id(func))
    if own is None or not called_as(func, own):
        return None
    _INFERRING.add(key)
    try:
        return first(CALLERS, ctx, func, own, name, depth)
    finally:
        _INFERRING.discard(key)


PARAMETERS: list[Parameter] = [
    lambda ctx, scope, name, depth: fixture(ctx, name, scope, depth),  # pytest fixtures
    _lambda_default,
    _rewritten,  # ``def forward(self, x)`` of a class whose instances replace another's
    _given,  # what every call of the function passes (`passing`)
]


def parameter(
    ctx: Context, scope: Scope, bindings: list[Binding] | None, name: str, depth: int
) -> Resolved | None:
    """A parameter (or pytest fixture) whose own binding says nothing: what is passed."""
    if not bindings or not all(says_nothing(b) for b in bindings):
        return None
    return first(PARAMETERS, ctx, scope, name, depth)


# What a name is, before its bindings in ``scope`` are combined.
NAMES: list[Named] = [
    parameter,
    lambda ctx, scope, bindings, name, depth: declared_type(ctx, scope, bindings, name),
]


# -- what a binding with an expression gives, by its kind (others: `VALUE`) ---------
def _value(ctx: Context, binding: Binding, scope: Scope, depth: int) -> Resolved | None:
    value = _expr(binding)
    if isinstance(value, (ast.List, ast.Dict)):
        return appended(ctx, binding, depth) or ctx.resolve(value, scope, depth + 1)
    return holder_items(ctx, binding, ctx.resolve(value, scope, depth + 1), depth)


def _expr(binding: Binding) -> ast.expr:
    assert binding.expr is not None  # (the resolver answers bindings without one itself)
    return binding.expr


BINDINGS: dict[str, Bound] = {
    "entered": lambda ctx, b, scope, depth: entered(ctx, _expr(b), scope, depth),  # ``with``
    "element": lambda ctx, b, scope, depth: element(ctx, _expr(b), b.position, scope, depth),
    "unpacked": lambda ctx, b, scope, depth: unpacked(ctx, _expr(b), b.position or 0, scope, depth),
}
VALUE: Bound = _value


# What an expression of each node type is (names and attributes: the resolver's own).
def _call(ctx: Context, expr: ast.Call, scope: Scope, depth: int) -> Resolved:
    """What a call gives: a class picked by name from a module of modules, else `call_result`."""
    return picked_class(ctx, expr, scope, depth) or call_result(ctx, expr, scope, depth)


EXPRESSIONS: dict[type[ast.AST], Expression] = {
    ast.Subscript: subscript,
    ast.Call: _call,
    **dict.fromkeys(COLLECTIONS, collection),
    ast.IfExp: branches,  # ``A() if c else B()``
    ast.BoolOp: branches,  # ``net or Net()``
}


def _saved(ctx: Context, expr: ast.Attribute, scope: Scope, depth: int) -> Resolved | None:
    saved = saved_on_ctx(ctx, expr, scope, depth)
    return None if saved is None else replace(saved, name=expr.attr)


# What an attribute is before its owner is resolved.
ATTRIBUTES: list[Attribute] = [
    _saved,  # ``ctx.layer = layer`` in an autograd ``forward``
    lambda ctx, expr, scope, depth: library_attribute(ctx, expr, scope),  # ``PPO(...).policy``
]

# What an unresolved name or attribute is narrowed to.
NARROWING: list[Narrowing] = [narrowed_here]  # ``isinstance`` guards


def _in_scope(strategy: Callable[[Context, ast.expr, Scope], Resolved | None]) -> Evidence:
    return lambda ctx, receiver, site: strategy(ctx, receiver, site.scope)


# What the code around an unresolved receiver says of it (`evidence`).
EVIDENCE: list[Evidence] = [
    _in_scope(used_as_module),  # ``x.parameters()``, ``DDP(x)``, ``eval_mode(x: nn.Module)``
    _in_scope(used_by_siblings),  # ``self.model.eval()`` in another subclass of the base
    _in_scope(alias_used_as_module),  # ``_model = model`` where ``model`` is used as one
    keyed_entry,  # ``self.nets[k]`` of a ``ModuleDict``-like table
    picked_by_name,  # ``getattr(self, name)`` over module attributes
    attribute_alias,  # ``mdl = self.mdl``: what is said of ``self.mdl``
    submodule,  # ``owner.x`` of a module instance
    in_submodule,  # ``model.model.layers[i]``: an element of a submodule
]


def evidence(ctx: Context, receiver: ast.expr, site: CallSite) -> Resolved | None:
    """The receiver's kind from its use or its owner; ``None`` when nothing is said."""
    if other_framework_file(ctx.file.tree, ctx.file.imports_torch):
        return None  # ``paddle``'s ``Layer.eval()``: not torch's
    return first(EVIDENCE, ctx, receiver, site)


def first(strategies: list[Callable[..., Resolved | None]], *args: object) -> Resolved | None:
    """The first answer of ``strategies``, asked in order; ``None`` when none answers or
    one settles the question unresolved (`SETTLED`)."""
    for strategy in strategies:
        found = strategy(*args)
        if found is not None:
            return None if found is SETTLED else found
    return None
