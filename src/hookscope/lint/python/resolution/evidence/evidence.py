"""What the code around a ``.forward(...)`` call says about a receiver of unknown type,
counted only where a reader would accept it as proof: its **use** (a method only
``torch.nn.Module`` has, ``DDP(x)``, a library function or a parameter that takes a
module; for ``self.x``, in any method of the class or of its same-file bases), or its
being a **submodule** (``owner.x`` of a module instance, registered by
``nn.Module.__setattr__``, unless named like a non-module: `known.NOT_MODULE_NAME`), or
an element of one.
"""

from __future__ import annotations

import ast
import os
import weakref
from collections.abc import Iterator
from dataclasses import replace

from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.attributes import class_attributes
from hookscope.lint.python.parse.bindings import Binding, dotted
from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.resolution.classes import base_names
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import import_origin, imported_file
from hookscope.lint.python.resolution.getattrs import is_getattr, picked_submodule
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.plain_tables import from_plain_tables, self_attribute_calls
from hookscope.lint.python.resolution.signatures import callee_of, declared_by_callee, parameter_of
from hookscope.lint.python.resolution.uses import (
    LOADED_MODULE_METHODS,
    module_method,
    module_taker,
    torch_loaded,
)

_ONLY_MODULES = "only torch modules have it"


def _module_only(resolver: Context, method: str) -> bool:
    """Whether ``x.method(...)`` says ``x`` is a module: only torch modules have the method,
    and no plain class of the project defines it next to a ``forward`` (`lookalikes`)."""
    return method in known.MODULE_ONLY_METHODS and method not in resolver.index.lookalike_methods


def used_by_siblings(resolver: Context, receiver: ast.expr, scope: Scope) -> Resolved | None:
    """``self.x`` that a same-file base assigns and another subclass of that base calls a
    module-only method on (``self.model.eval()`` in ``ValidEpoch`` next to ``TrainEpoch``)."""
    if not (
        isinstance(receiver, ast.Attribute)
        and isinstance(receiver.value, ast.Name)
        and receiver.value.id == scope.self_name
        and scope.cls is not None
    ):
        return None
    lineage = _with_local_bases(resolver, scope.cls)
    owners = {c.name for c in lineage[1:] if receiver.attr in class_attributes(c)}
    if not owners:
        return None
    for other in resolver.file.classes.values():
        if other in lineage or not owners & {c.name for c in _with_local_bases(resolver, other)}:
            continue
        for method in other.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            own = [*method.args.posonlyargs, *method.args.args][:1]
            for node in ast.walk(method):
                if (
                    own
                    and isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and _module_only(resolver, node.func.attr)
                    and dotted(node.func.value) == f"{own[0].arg}.{receiver.attr}"
                ):
                    where = f"{resolver.file.path}:{node.lineno}"
                    via = f"{dotted(node.func)}(...) in {other.name} at {where}"
                    return Resolved(Kind.MODULE, name=receiver.attr, via=f"{via}: {_ONLY_MODULES}")
    return None


def used_as_module(resolver: Context, receiver: ast.expr, scope: Scope) -> Resolved | None:
    """A module-only method called on the receiver, the receiver wrapped as a module, or
    passed to a parameter declared a module."""
    path = _spelled(receiver)
    if path is None:
        return None
    self_name = scope.self_name
    is_self_attr = bool(self_name) and path.startswith(f"{self_name}.") and scope.cls is not None
    loaded = torch_loaded(resolver, receiver, scope)
    for node, where in _calls_naming(resolver, scope, path, is_self_attr):
        func = node.func
        hit, why = "", _ONLY_MODULES
        if (
            isinstance(func, ast.Attribute)
            and _same(func.value, path, is_self_attr)
            and module_method(resolver, node, where, loaded=bool(loaded))
        ):
            hit = f"{path}.{func.attr}(...)"
            if func.attr not in known.MODULE_ONLY_METHODS and loaded:
                hit, why = f"{loaded}, then {hit}", "only a pickled module has both"
        elif node.args and _same(node.args[0], path, is_self_attr):
            name = module_taker(resolver, node, where)
            if name:
                hit, why = f"{name}({path}, ...)", "it takes a torch module"
        if hit:
            via = f"{hit} at {resolver.file.path}:{node.lineno}: {why}"
            return Resolved(Kind.MODULE, name=path.rsplit(".", 1)[-1], via=via)
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if _same(arg, path, is_self_attr):
                declared = declared_by_callee(resolver, node, arg, where)
                declared = declared or _used_by_callee(resolver, node, arg, where)
                if declared is not None:
                    return replace(declared, name=path.rsplit(".", 1)[-1])
    return None


def _used_by_callee(
    resolver: Context, call: ast.Call, argument: ast.expr, scope: Scope
) -> Resolved | None:
    """``argument`` of ``call`` is a module because the project function called never
    rebinds its parameter and uses it as one in a top-level statement (an ``if``/``try``
    may test for the method first): ``for name, m in model.named_modules(): ...``."""
    found = callee_of(resolver, call, scope)
    if found is None:
        return None
    owner, func, skip = found
    param = parameter_of(func, skip, call, argument)
    if param is None or param is func.args.vararg:
        return None
    bindings = owner.bindings_of(func).get(param.arg, [])
    if len(bindings) != 1:
        return None  # rebound in the body
    for node in _unconditional_calls(func):
        method = node.func
        if (
            isinstance(method, ast.Attribute)
            and isinstance(method.value, ast.Name)
            and method.value.id == param.arg
            and module_method(owner, node, owner.scope_of(func))
        ):
            via = f"passed to {func.name}({param.arg}), which calls {param.arg}.{method.attr}(...)"
            where = f"{owner.file.path}:{node.lineno}"
            return Resolved(Kind.MODULE, via=f"{via} at {where}: {_ONLY_MODULES}")
    return None


def _unconditional_calls(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    """The calls that every run of ``func`` makes, as far as its top-level statements say:
    simple statements, a loop's iterable, a ``with``'s items (not their bodies)."""
    for stmt in func.body:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            parts: list[ast.AST] = [stmt.iter]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            parts = [item.context_expr for item in stmt.items]
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            parts = [stmt]
        else:
            continue
        for part in parts:
            yield from (n for n in ast.walk(part) if isinstance(n, ast.Call))


# Receivers of these count only with more said (`uses.module_method`).
_INDEXED_METHODS = LOADED_MODULE_METHODS | {"apply"}

#: Per scope and mode (``whole_class``): spelled name -> the calls that name it, in order.
_NAMING: weakref.WeakKeyDictionary[Scope, dict[bool, dict[str, list[tuple[ast.Call, Scope]]]]]
_NAMING = weakref.WeakKeyDictionary()


def _calls_naming(
    resolver: Context, scope: Scope, path: str, whole_class: bool
) -> list[tuple[ast.Call, Scope]]:
    """The calls of `_calls` where ``path`` is the receiver of a method or an argument (as
    `_same` compares them), in their order; indexed once per scope, not walked per site."""
    modes = _NAMING.setdefault(scope, {})
    index = modes.get(whole_class)
    if index is None:
        index = modes[whole_class] = {}
        for node, where in _calls(resolver, scope, whole_class):
            func = node.func
            # the receiver counts only for a module-only method (`m.forward(x)` says nothing)
            exprs = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(func, ast.Attribute) and (
                _module_only(resolver, func.attr) or func.attr in _INDEXED_METHODS
            ):
                exprs.append(func.value)
            for key in {_key(_spelled(e), whole_class) for e in exprs}:
                if key is not None:
                    index.setdefault(key, []).append((node, where))
    return index.get(_key(path, whole_class) or "", [])


def _key(spelled: str | None, self_attr: bool) -> str | None:
    """What `_same` compares: the spelling, or for ``self.x`` what follows the self name."""
    if spelled is None or not self_attr:
        return spelled
    return spelled.partition(".")[2] if "." in spelled else None


def _calls(resolver: Context, scope: Scope, whole_class: bool) -> Iterator[tuple[ast.Call, Scope]]:
    """The calls in ``scope``'s function (in every method of its class: ``whole_class``),
    each with the scope of the method it is in."""
    if not whole_class or scope.cls is None:
        yield from ((node, scope) for node in scope.calls())
        return
    for cls in _with_local_bases(resolver, scope.cls):
        for stmt in cls.body:
            where = resolver.file.scopes.get(id(stmt))
            if where is not None and where.node is stmt:  # a method: its calls are known
                yield from ((node, where) for node in where.calls())
            else:
                where = where or scope
                yield from ((n, where) for n in ast.walk(stmt) if isinstance(n, ast.Call))


def _with_local_bases(resolver: Context, cls: ast.ClassDef) -> list[ast.ClassDef]:
    """``cls`` and its bases defined in the same file (their methods share ``self``)."""
    out: list[ast.ClassDef] = []
    todo = [cls]
    while todo:
        current = todo.pop()
        if current in out:
            continue
        out.append(current)
        for base in base_names(current):
            found = resolver.file.classes.get(base.rsplit(".", 1)[-1])
            if found is not None:
                todo.append(found)
    return out


def _same(node: ast.expr, path: str, is_self_attr: bool) -> bool:
    """``node`` spells ``path`` (``self.x`` in any method, whatever its self name)."""
    spelled = _spelled(node)
    if spelled is None or not is_self_attr:
        return spelled == path
    return spelled.partition(".")[2] == path.partition(".")[2] and "." in spelled


def _spelled(node: ast.expr) -> str | None:
    """``a.b`` for a dotted name, ``a.b[0]`` for one indexed by a constant."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        inner = dotted(node.value)
        return f"{inner}[{node.slice.value!r}]" if inner is not None else None
    return dotted(node)


def submodule(resolver: Context, receiver: ast.expr, site: CallSite) -> Resolved | None:
    """``owner.x`` (or ``getattr(owner, name)``) with ``owner`` a module instance and ``x``
    not named like a non-module."""
    if isinstance(receiver, ast.Attribute):
        if known.NOT_MODULE_NAME.search(receiver.attr):
            return None
        value, name = receiver.value, receiver.attr
    elif is_getattr(receiver) and len(receiver.args) == 2:
        value, name = receiver.args[0], ""
    else:
        return None
    owner = resolver.resolve(value, site.scope)
    if owner.kind is Kind.UNKNOWN and not owner.is_class:
        owner = resolver.evidence(value, site) or owner
    if owner.kind is not Kind.MODULE or owner.is_class:
        return None
    if not name and owner.cls:  # a project class: the attributes it can be are known
        return picked_submodule(resolver, receiver, site) if is_getattr(receiver) else None
    if name and _from_library_calls(resolver, value, name, site.scope):
        return None  # ``self.x = lib.load(...)``: whatever a library gives, not proof
    if name and from_plain_tables(resolver, value, name, site.scope):
        return None  # ``self.task = build(TASKS, cfg)``: one of a table's plain classes
    shown = ast.unparse(value)
    why = f"`{shown}` is a module ({owner.via})" if owner.via else f"`{shown}` is a module"
    return Resolved(Kind.MODULE, name=name, via=f"a submodule: {why}")


def in_submodule(resolver: Context, receiver: ast.expr, site: CallSite) -> Resolved | None:
    """An element of a submodule (``model.model.layers[i]``, ``for layer in ...``): an
    indexed or iterated submodule is a ``ModuleList``, ``Sequential`` or ``ModuleDict``."""
    holder: ast.expr | None
    if isinstance(receiver, ast.Subscript) and not isinstance(receiver.slice, ast.Slice):
        holder = receiver.value
    elif isinstance(receiver, ast.Name):
        holder = _iterated(resolver.bindings_of(site.scope.node).get(receiver.id, []))
    else:
        return None
    if isinstance(holder, ast.Name):  # ``layers = model.model.layers`` ... ``layers[i]``
        bindings = resolver.bindings_of(site.scope.node).get(holder.id, [])
        holder = bindings[0].expr if len(bindings) == 1 and bindings[0].kind == "value" else None
    if not isinstance(holder, ast.Attribute):
        return None
    if resolver.resolve(holder, site.scope).kind not in (Kind.UNKNOWN, Kind.MODULE):
        return None  # ``self.items = []``: a plain list, not a submodule
    held = resolver.submodule(holder, site)
    if held is None:
        return None
    return Resolved(Kind.MODULE, via=f"an element of {ast.unparse(holder)}, {held.via}")


def _iterated(bindings: list[Binding]) -> ast.expr | None:
    """What every binding of a loop variable iterates over, when that is one expression:
    ``for x in holder``, ``for i, x in enumerate(holder)``."""
    spelled: set[str] = set()
    holder: ast.expr | None = None
    for binding in bindings:
        expr = binding.expr
        if binding.kind != "element" or expr is None:
            return None
        if binding.position is not None:
            if not (
                binding.position == 1
                and isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Name)
                and expr.func.id == "enumerate"
                and len(expr.args) == 1
                and not expr.keywords
            ):
                return None
            expr = expr.args[0]
        spelled.add(ast.dump(expr))
        holder = expr
    return holder if len(spelled) == 1 else None


def _from_library_calls(resolver: Context, value: ast.expr, name: str, scope: Scope) -> bool:
    """Every assignment of ``self.<name>`` in the class is the result of an external
    library's function (``exec_lib._load_for_executorch(p)``): not shown a submodule."""
    calls = self_attribute_calls(value, name, scope)
    return calls is not None and all(
        _library_function(resolver, call.func, resolver.scope_of(owner)) for call, owner in calls
    )


def _library_function(resolver: Context, func: ast.expr, scope: Scope) -> bool:
    """``func`` names a function (not a class) imported from outside the project (torch
    left out: ``torch.hub.load`` and friends give modules)."""
    path = dotted(func) or ""
    origin = import_origin(resolver, path, scope) if path else ""
    module, _, last = origin.rpartition(".")
    if not module or module.startswith((".", "torch")) or last.lstrip("_")[:1].isupper():
        return False  # a class of the library (``ASGLoss(...)``) may well be a module
    top = os.path.join(resolver.index.root or ".", module.partition(".")[0])
    if os.path.exists(top) or os.path.exists(f"{top}.py") or resolver.index.functions.get(last):
        return False  # a function of the project (``src/`` layouts: by its name)
    return imported_file(resolver, module) is None
