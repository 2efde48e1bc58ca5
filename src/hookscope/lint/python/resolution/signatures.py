"""How a call binds a function's parameters, and what it hands back: the callee of a call,
the parameter an argument binds and the argument a parameter gets, a callee's annotation
as evidence (``def eval_mode(*nets: nn.Module)``), an element of a returned tuple.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import Binding, dotted, returned
from hookscope.lint.python.parse.calls import names_used
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign_function, import_origin
from hookscope.lint.python.resolution.kinds import UNKNOWN, Kind, Resolved
from hookscope.lint.python.resolution.methods import find_method


def declared_by_callee(
    resolver: Context, call: ast.Call, argument: ast.expr, scope: Scope
) -> Resolved | None:
    """``argument`` of ``call`` is a module because the callee's parameter says so."""
    found = callee_of(resolver, call, scope)
    if found is None:
        return None
    owner, func, skip = found
    param = parameter_of(func, skip, call, argument)
    if param is None or param.annotation is None:
        return None
    declared = owner.annotation(param.annotation)
    if declared.kind is not Kind.MODULE or declared.is_class:
        return None
    shown = " ".join(ast.unparse(param.annotation).split())
    via = f"passed to {func.name}({param.arg}: {shown}) declared at {owner.file.path}:{func.lineno}"
    return Resolved(Kind.MODULE, via=via)


def used_here(resolver: Context, callee: str) -> bool:
    """Whether the file names ``callee`` other than in ``super(...)``, ``isinstance(...)``
    / ``issubclass(...)`` and annotations (where naming a class calls nothing)."""
    resolver.calls_named(callee)  # (its walk of the file records the names used)
    used = names_used(resolver.file.tree)
    return used is None or callee in used


def unpacked(
    resolver: Context, value: ast.expr, position: int, scope: Scope, depth: int
) -> Resolved:
    """Element ``position`` of what ``value`` (a call of a project function) returns, when
    every ``return`` of that function is a tuple."""
    if not isinstance(value, ast.Call):
        return UNKNOWN
    found = callee_of(resolver, value, scope)
    if found is None:
        return _handed_back(resolver, value, position, scope, depth)
    owner, func, _ = found
    returns, yields = returned(func)
    if yields:
        return UNKNOWN
    return tuple_element(owner, func, returns, position, depth, f"{func.name}() returns")


def tuple_element(
    owner: Context, func: Function, values: list[ast.expr], position: int, depth: int, what: str
) -> Resolved:
    """Element ``position`` of ``values`` (what ``func`` hands back: ``what`` says how)
    when each of them is a tuple that long, else `UNKNOWN`."""
    elements = [
        v.elts[position]
        for v in values
        if isinstance(v, ast.Tuple)
        and position < len(v.elts)
        and not any(isinstance(e, ast.Starred) for e in v.elts)
    ]
    if not values or len(elements) != len(values):
        return UNKNOWN
    result = owner.combine([Binding("value", e, func) for e in elements], depth + 1)
    if result.kind is Kind.UNKNOWN:
        return result
    where = f"{owner.file.path}:{func.lineno}"
    shown = f"element {position} of what {what} at {where}"
    return replace(result, via=f"{shown} ({result.via})" if result.via else shown)


def _handed_back(
    resolver: Context, call: ast.Call, position: int, scope: Scope, depth: int
) -> Resolved:
    """Element ``position`` of ``accelerator.prepare(model, opt)``-like calls, which hand
    back their arguments in order: a module when that argument is one. (Element 0 of
    ``deepspeed.initialize(...)`` is always one: `known.FIRST_IS_MODULE`.)"""
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    path = dotted(func) or ""
    if position == 0 and path and import_origin(resolver, path, scope) in known.FIRST_IS_MODULE:
        origin = import_origin(resolver, path, scope)
        return Resolved(Kind.MODULE, name=last, via=f"element 0 of {origin}(...) is a module")
    args = call.args
    if (
        last not in known.PASS_THROUGH_TUPLES
        or position >= len(args)
        or any(isinstance(a, ast.Starred) for a in args)
    ):
        return UNKNOWN
    given = resolver.resolve(args[position], scope, depth + 1)
    if given.kind is not Kind.MODULE or given.is_class:
        return UNKNOWN
    shown = f" ({given.via})" if given.via else ""
    return replace(given, via=f"{last}(...) hands back argument {position}, a module{shown}")


def callee_of(
    resolver: Context, call: ast.Call, scope: Scope
) -> tuple[Context, Function, int] | None:
    """The function ``call`` runs, the resolver of its file, and the parameters that the
    call fills implicitly (1 for ``self``/``cls`` of a bound method)."""
    found = resolver.resolve(call.func, scope)
    if found.is_class and found.name:  # a constructor: the parameters of __init__
        located = find_method(resolver, found.name.rsplit(".", 1)[-1], "__init__")
        return None if located is None else (*located, 1)
    if found.function is not None:
        owner, func = resolver, found.function
    elif found.factory:
        located = foreign_function(resolver, found.factory)
        if located is None:
            return None
        owner, func = located
    else:
        return None
    defined = owner.file.scopes.get(id(func))
    bound = isinstance(call.func, ast.Attribute) and defined is not None and defined.self_name
    return owner, func, 1 if bound else 0


def says_nothing(binding: Binding) -> bool:
    """A parameter binding that tells nothing of the value: no annotation, or ``Any`` /
    ``object`` (``def __init__(self, classifier: Any)``), so its callers must tell."""
    if binding.kind == "opaque":
        return binding.expr is None
    if binding.kind != "annotation" or binding.expr is None:
        return False
    if not isinstance(binding.owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return (dotted(binding.expr) or "").rsplit(".", 1)[-1] in ("Any", "object")


def parameter_of(func: Function, skip: int, call: ast.Call, argument: ast.expr) -> ast.arg | None:
    """The parameter of ``func`` that ``argument`` of ``call`` is bound to."""
    params = [*func.args.posonlyargs, *func.args.args][skip:]
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None  # the positions after it are unknown
        if arg is argument:
            return params[position] if position < len(params) else func.args.vararg
    for keyword in call.keywords:
        if keyword.value is argument and keyword.arg is not None:
            named = [*func.args.args[skip:], *func.args.kwonlyargs]
            return next((p for p in named if p.arg == keyword.arg), None)
    return None


def is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def left_none(func: Function, skip: int, call: ast.Call, name: str) -> bool:
    """Whether ``call`` leaves the parameter ``name`` of ``func`` at its default ``None``
    (``def evaluate(x, lpips_model=None)`` called as ``evaluate(x)``)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    pairs = list(zip(positional, [*defaults, *args.defaults], strict=True))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    default = next((d for p, d in pairs if p.arg == name), None)
    if not is_none(default) or any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if any(k.arg is None or k.arg == name for k in call.keywords):
        return False  # ``**kwargs`` may hold it
    names = [p.arg for p in positional[skip:]]
    return name not in names or names.index(name) >= len(call.args)


def argument_for(func: Function, skip: int, call: ast.Call, name: str) -> ast.expr | None:
    """The value ``call`` passes to the parameter ``name`` of ``func`` (``None``: unknown,
    a default, or passed through ``*args``/``**kwargs``)."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    params = [p.arg for p in [*func.args.posonlyargs, *func.args.args][skip:]]
    if name not in params:
        return None
    position = params.index(name)
    before = call.args[: position + 1]
    if any(isinstance(a, ast.Starred) for a in before) or position >= len(call.args):
        return None
    return call.args[position]
