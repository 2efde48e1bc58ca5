"""What names and ``self`` attributes are bound to, collected per scope without types.

A binding is the expression a name was given, in the scope that gave it:
``x = Linear(...)`` (value), ``x: nn.Module`` (annotation), ``for x in self.layers``
(element of an iterable), ``task, x = build()`` (unpacked: element 1 of what ``build()``
gives), ``import torch.nn as nn`` (namespace).
"""

from __future__ import annotations

import ast
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

BindingKind = Literal[
    "value",
    "annotation",
    "element",
    "unpacked",
    "namespace",
    "import",
    "class",
    "function",
    "opaque",
    "entered",
]


@dataclass(frozen=True)
class Binding:
    """One binding of a name.

    Attributes:
        kind: how the name was bound.
        expr: the value, annotation or iterable expression (``None`` for opaque ones);
            for ``entered`` ones (``with cm() as name``), the context manager.
        owner: the function, class or module node in whose scope ``expr`` is evaluated.
        position: for ``element`` and ``unpacked`` bindings of tuple targets, the index
            in the tuple.
        origin: for ``import`` bindings, the dotted name imported.
        where: ``path:line`` of a binding made in another file (project index).
    """

    kind: BindingKind
    expr: ast.expr | None
    owner: ast.AST
    position: int | None = None
    origin: str = ""
    where: str = ""


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else ``None``."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def scope_bindings(owner: ast.AST) -> dict[str, list[Binding]]:
    """Bindings made directly in a function's (or the module's) body, with parameters."""
    out: dict[str, list[Binding]] = {}
    if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = owner.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            kind: BindingKind = "annotation" if arg.annotation is not None else "opaque"
            out.setdefault(arg.arg, []).append(Binding(kind, arg.annotation, owner))
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                out.setdefault(extra.arg, []).append(Binding("opaque", None, owner))
    body = [owner.body] if isinstance(owner, ast.Lambda) else getattr(owner, "body", [])
    for node in own_nodes(body):
        _bind(node, owner, out)
    return out


def global_bindings(module: ast.Module) -> dict[str, list[Binding]]:
    """Bindings of module-level names made in functions that declare them ``global``
    (``global _model`` ... ``_model = Encoder()`` in ``load_model``), each evaluated in
    its function."""
    out: dict[str, list[Binding]] = {}
    stack: list[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]] = [(module, None)]
    while stack:
        node, func = stack.pop()
        for child in child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append((child, child))
            elif isinstance(child, ast.Global) and func is not None:
                made = scope_bindings(func)
                params = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
                for name in child.names:
                    if name not in params:
                        out.setdefault(name, []).extend(made.get(name, []))
            elif not isinstance(child, (ast.expr, ast.Lambda)):
                stack.append((child, func))
    return out


def lambda_default(func: ast.Lambda, name: str) -> ast.expr | None:
    """The default of the lambda's parameter ``name`` (evaluated where the lambda is
    written; ``lambda r=renderer: r.forward(x)`` is called without arguments)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = [
        *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    return next((value for arg, value in pairs if arg.arg == name and value is not None), None)


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes` as a list, in its order, without its two generators
    (twice as fast: the rules' walks over whole files spend most of their time there)."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    out.append(item)
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk`: ``node`` and everything under it, in the same (breadth-first) order."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(child_nodes(node))
        yield node


def own_nodes(body: Sequence[ast.AST]) -> list[ast.AST]:
    """Nodes of a body, not descending into nested functions or classes."""
    # The children in `ast.iter_child_nodes` order, read without its two generators
    # (a third of the rules' walking time went into them).
    out: list[ast.AST] = []
    stack = list(reversed(body))
    push = stack.append
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _NESTED):
            continue
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
    return out


def _bind(node: ast.AST, owner: ast.AST, out: dict[str, list[Binding]]) -> None:
    def add(name: str, binding: Binding) -> None:
        out.setdefault(name, []).append(binding)

    if isinstance(node, ast.Assign):
        for target in node.targets:
            _bind_target(target, node.value, owner, add)
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        add(node.target.id, Binding("annotation", node.annotation, owner))
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        _bind_element(node.target, node.iter, owner, add)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if isinstance(node, ast.ClassDef):
            add(node.name, Binding("class", None, owner, origin=node.name))
        else:  # the owner of a function binding is the function itself
            add(node.name, Binding("function", None, node, origin=node.name))
    elif isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            add(name, Binding("namespace", None, owner, origin=alias.name))
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            origin = f"{node.module or ''}.{alias.name}"
            add(alias.asname or alias.name, Binding("import", None, owner, origin=origin))
    elif isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
        add(node.optional_vars.id, Binding("entered", node.context_expr, owner))
    elif isinstance(node, ast.NamedExpr):
        add(node.target.id, Binding("value", node.value, owner))


_Add = Callable[[str, Binding], None]


def _bind_target(target: ast.expr, value: ast.expr, owner: ast.AST, add: _Add) -> None:
    if isinstance(target, ast.Name):
        add(target.id, Binding("value", value, owner))
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
        # (``engine, *_ = initialize(...)``: the names ahead of a starred one keep their index)
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        for i, elt in enumerate(target.elts):
            if not isinstance(elt, ast.Name):
                continue
            if values is None and (not starred or i < starred[0]):
                add(elt.id, Binding("unpacked", value, owner, position=i))
                continue
            sub = values[i] if values and len(values) == len(target.elts) else None
            kind: BindingKind = "value" if sub is not None else "opaque"
            add(elt.id, Binding(kind, sub, owner))


def _bind_element(target: ast.expr, iterable: ast.expr, owner: ast.AST, add: _Add) -> None:
    if isinstance(target, ast.Name):
        add(target.id, Binding("element", iterable, owner))
    elif isinstance(target, (ast.Tuple, ast.List)):
        for i, elt in enumerate(target.elts):
            if isinstance(elt, ast.Name):
                add(elt.id, Binding("element", iterable, owner, position=i))
            elif isinstance(elt, (ast.Tuple, ast.List)):
                # ``for i, (a, b) in enumerate(zip(xs, ys))``: ``(a, b)`` runs over ``zip(...)``
                inner = _spread(iterable, i)
                if inner is not None:
                    _bind_element(elt, inner, owner, add)


def _spread(iterable: ast.expr, i: int) -> ast.expr | None:
    """What element ``i`` of each item of ``enumerate(xs)`` / ``zip(xs, ...)`` runs over."""
    if not isinstance(iterable, ast.Call) or not isinstance(iterable.func, ast.Name):
        return None
    if iterable.func.id == "enumerate" and i == 1 and iterable.args:
        return iterable.args[0]
    if iterable.func.id == "zip" and i < len(iterable.args):
        return iterable.args[i]
    return None


def class_attributes(cls: ast.ClassDef) -> dict[str, list[Binding]]:
    """``self.x = ...`` in the class's methods and ``x: T`` / ``x = ...`` in its body."""
    out: dict[str, list[Binding]] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out.setdefault(stmt.target.id, []).append(Binding("annotation", stmt.annotation, cls))
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(Binding("value", stmt.value, cls))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _method_attributes(stmt, out)
    return out


def _method_attributes(
    method: ast.FunctionDef | ast.AsyncFunctionDef, out: dict[str, list[Binding]]
) -> None:
    args = [*method.args.posonlyargs, *method.args.args]
    if not args:
        return
    self_name = args[0].arg
    for node in own_nodes(method.body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and _is_self_attr(target, self_name):
                    out.setdefault(target.attr, []).append(Binding("value", node.value, method))
                elif isinstance(target, (ast.Tuple, ast.List)):  # self.a, self.b = make()
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else None
                    for i, elt in enumerate(target.elts):
                        if isinstance(elt, ast.Attribute) and _is_self_attr(elt, self_name):
                            bound = (
                                Binding("value", values[i], method)
                                if values is not None and len(values) == len(target.elts)
                                else Binding("unpacked", node.value, method, position=i)
                            )
                            out.setdefault(elt.attr, []).append(bound)
        elif isinstance(node, ast.AnnAssign) and _is_self_attr(node.target, self_name):
            attr = node.target.attr  # type: ignore[union-attr]  # checked by _is_self_attr
            out.setdefault(attr, []).append(Binding("annotation", node.annotation, method))
        elif isinstance(node, ast.Call):
            named = _set_by_name(node, self_name)
            if named is not None:
                out.setdefault(named[0], []).append(Binding("value", named[1], method))
            elif _keeps_locals(node, self_name):
                for name, local in scope_bindings(method).items():
                    if name != self_name:
                        out.setdefault(name, []).extend(local)


def _keeps_locals(call: ast.Call, self_name: str) -> bool:
    """``self.__dict__.update(locals())``: every local of the method becomes an attribute
    of that name (yolov5's ``DetectMultiBackend``)."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "update"
        and _is_self_attr(func.value, self_name)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
        and len(call.args) == 1
        and isinstance(call.args[0], ast.Call)
        and dotted(call.args[0].func) == "locals"
    )


def _set_by_name(call: ast.Call, self_name: str) -> tuple[str, ast.expr] | None:
    """``(attribute, value)`` of ``setattr(self, "name", value)`` /
    ``self.add_module("name", value)`` / ``self.register_module(...)``. An f-string name
    (``setattr(self, f"layer_{i}", Block())``) gives its text with the fields kept
    (``layer_{i}``): no attribute is spelled so, but a ``getattr(self, f"layer_{j}")``
    matches it by its prefix."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) == 3:
        owner, name, value = call.args
        if not (isinstance(owner, ast.Name) and owner.id == self_name):
            return None
    elif (
        isinstance(func, ast.Attribute)
        and func.attr in ("add_module", "register_module")
        and _is_self_attr(func, self_name)
        and len(call.args) == 2
    ):
        name, value = call.args
    else:
        return None
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value, value
    if isinstance(name, ast.JoinedStr) and name.values:
        first = name.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value:
            return ast.unparse(name)[2:-1], value  # ``f"layer_{i}"`` -> ``layer_{i}``
    prefix = name_prefix(name)  # ``"net_D_" + key``, ``"net_DT%d" % n`` -> ``net_D_{...}``
    return (prefix + "{...}", value) if prefix else None


def name_prefix(name: ast.expr) -> str:
    """The constant start of a name built at run time: ``"layer_" + key``, ``"layer%d" %
    i``, ``"layer_{}".format(i)``, ``f"layer_{i}"`` give ``layer_``; ``""`` otherwise."""
    if isinstance(name, ast.JoinedStr) and name.values:
        first = name.values[0]
        return (
            first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
        )
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Add):
        left = name.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str):
            return left.value
        return name_prefix(left)
    template, stop = "", ""
    if isinstance(name, ast.BinOp) and isinstance(name.op, ast.Mod):
        template, stop = _constant_str(name.left), "%"
    elif (
        isinstance(name, ast.Call)
        and isinstance(name.func, ast.Attribute)
        and name.func.attr == "format"
    ):
        template, stop = _constant_str(name.func.value), "{"
    return template.split(stop, 1)[0] if stop and stop in template else ""


def _constant_str(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _is_self_attr(node: ast.AST, self_name: str) -> bool:
    if isinstance(node, ast.Attribute):
        node = on_instance(node) or node  # ``self.__class__._model = ...``
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


def on_instance(expr: ast.Attribute) -> ast.Attribute | None:
    """``obj.x`` for ``obj.__class__.x`` or ``type(obj).x`` (a class attribute read or
    set through the instance's class: a lazily cached model), else ``None``."""
    owner = expr.value
    if isinstance(owner, ast.Attribute) and owner.attr == "__class__":
        inner = owner.value
    elif (
        isinstance(owner, ast.Call)
        and dotted(owner.func) == "type"
        and len(owner.args) == 1
        and not owner.keywords
    ):
        inner = owner.args[0]
    else:
        return None
    if not isinstance(inner, ast.Name):
        return None
    return ast.copy_location(ast.Attribute(value=inner, attr=expr.attr, ctx=ast.Load()), expr)


# function -> (returns, yields): asked again for each call of the function that is
# resolved (1,274 times for 6 functions of one torch test file); gone with the tree.
_RETURNED: weakref.WeakKeyDictionary[ast.AST, tuple[tuple[ast.expr, ...], ...]] = (
    weakref.WeakKeyDictionary()
)


def returned(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[ast.expr], list[ast.expr]]:
    """The expressions a function returns and the ones it yields (its own body only)."""
    known = _RETURNED.get(func)
    if known is None:
        returns: list[ast.expr] = []
        yields: list[ast.expr] = []
        for node in own_nodes(func.body):
            if isinstance(node, ast.Return) and node.value is not None:
                returns.append(node.value)
            elif isinstance(node, ast.Yield) and node.value is not None:
                yields.append(node.value)
        known = _RETURNED[func] = (tuple(returns), tuple(yields))
    return list(known[0]), list(known[1])


def only_raises(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body that only raises (after its docstring): a method for subclasses to define."""
    body = [
        stmt
        for stmt in func.body
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
    ]
    return bool(body) and all(isinstance(stmt, ast.Raise) for stmt in body)
