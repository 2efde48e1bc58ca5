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
        origin: for ``import`` and ``namespace`` bindings, the dotted name bound.
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
        for alias in node.names:  # ``import a.b`` binds ``a``; ``import a.b as c``, ``a.b``
            name = alias.asname or alias.name.split(".")[0]
            origin = alias.name if alias.asname else name
            add(name, Binding("namespace", None, owner, origin=origin))
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
