"""What is put in lists and dicts after they are made: ``layers = []`` then
``layers.append(Block())``, ``models = {}`` then ``models["a"] = Block()`` (helpers of
`holders`, `containers`). For a local name, the appends of the function that made it (not
of nested ones); for ``self.blocks = []``, those of every method of the class.
``append``, ``insert``, ``extend([...])``, ``+= [...]`` and ``x[key] = value`` count; an
``extend`` or ``+=`` of anything but a display leaves the elements unknown.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import dotted, own_nodes
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import Kind


def filled_with(
    resolver: Context, target: str, owner: Function, depth: int
) -> tuple[Kind, str, str] | None:
    """What the functions filling ``target`` add to it, when every value resolves to one
    kind: that kind, the values' one class (``""`` when several) and ``VALUE at FILE:LINE``
    of the first; ``None`` otherwise."""
    scope = resolver.scope_of(owner)
    values: list[tuple[ast.expr, Scope]] = []
    for func, where, spelled in spellings(resolver, target, owner, scope) or ():
        found = values_added(func, spelled)
        if found is None:
            return None  # ``xs.extend(other)``: what it adds is not read here
        values.extend((v, where) for v in found)
    results = [resolver.resolve(v, s, depth + 1) for v, s in values]
    kinds = {r.kind for r in results}
    if not results or len(kinds) != 1 or Kind.UNKNOWN in kinds or any(r.is_class for r in results):
        return None
    first = values[0][0]
    shown = " ".join(ast.unparse(first).split())
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    classes = {r.cls for r in results}
    elem_cls = classes.pop() if len(classes) == 1 else ""
    return kinds.pop(), elem_cls, f"{shown} at {resolver.file.path}:{first.lineno}"


def spellings(
    resolver: Context, target: str, owner: Function, scope: Scope
) -> list[tuple[Function, Scope, str]] | None:
    """The functions that may fill ``target`` (a local name of ``owner``, or ``self.x``
    of its class: every method), each with its scope and how it spells ``target``;
    ``None`` when ``target`` is neither."""
    if "." not in target:
        return [(owner, scope, target)]
    if scope.cls is None or target.partition(".")[0] != scope.self_name:
        return None
    out = []
    for func in scope.cls.body:
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            where = resolver.scope_of(func)
            spelled = target if func is owner else _respelled(target, scope, where)
            if spelled is not None:
                out.append((func, where, spelled))
    return out


def _respelled(target: str, made: Scope, scope: Scope) -> str | None:
    """``self.blocks`` spelled with the ``self`` name of another method."""
    if not scope.self_name or not made.self_name:
        return None
    return f"{scope.self_name}.{target.partition('.')[2]}"


def values_added(func: Function, target: str) -> list[ast.expr] | None:
    """What ``func`` (its own body) puts into ``target``; ``None`` if it adds something
    that cannot be read (``extend`` of a name, ``+=`` of a call)."""
    out: list[ast.expr] = []
    own = own_nodes(func.body)
    if sum(_adds_to(n, target) for n in ast.walk(func)) != sum(_adds_to(n, target) for n in own):
        return None  # a nested function (a hook, say) adds to it too
    for node in own:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if dotted(node.func.value) != target:
                continue
            method, args = node.func.attr, node.args
            if method == "append" and len(args) == 1:
                out.append(args[0])
            elif method == "insert" and len(args) == 2:
                out.append(args[1])
            elif method == "extend" and len(args) == 1:
                if not isinstance(args[0], (ast.List, ast.Tuple)):
                    return None
                out.extend(args[0].elts)
        elif _item_set(node, target):
            assert isinstance(node, ast.Assign)
            out.append(node.value)
        elif isinstance(node, ast.AugAssign) and dotted(node.target) == target:
            if not isinstance(node.value, (ast.List, ast.Tuple)):
                return None
            out.extend(node.value.elts)
    return out


def _item_set(node: ast.AST, target: str) -> bool:
    """``target[key] = value``: an item put into a dict (or list) one at a time."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Subscript)
        and not isinstance(node.targets[0].slice, ast.Slice)
        and dotted(node.targets[0].value) == target
    )


def _adds_to(node: ast.AST, target: str) -> bool:
    if _item_set(node, target):
        return True
    if isinstance(node, ast.AugAssign):
        return dotted(node.target) == target
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("append", "insert", "extend")
        and dotted(node.func.value) == target
    )


# Containers whose rows unpack into modules: ``for attn, ff in self.layers`` where every
# row is a ``ModuleList([...])`` (a ``ModuleDict`` unpacks into its keys).
_ROW_CONTAINERS = frozenset({"ModuleList", "Sequential"})


def rows_of_modules(resolver: Context, iterable: ast.expr, scope: Scope, depth: int) -> bool:
    """Whether every row of ``iterable`` (``self.layers`` or a local name, a torch
    container) is a ``ModuleList``/``Sequential``, as built and as appended to it: then a
    tuple target's every name is a module (``for attn, ff in self.layers``)."""
    target = dotted(iterable)
    func = scope.method if target and "." in target else scope.node
    if not target or not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    fillers = spellings(resolver, target, func, scope)
    if fillers is None:
        return False
    rows: list[tuple[ast.expr, Scope]] = []
    for method, where, spelled in fillers:
        found, built = values_added(method, spelled), _built(method, spelled)
        if found is None or built is None:
            return False
        rows.extend((row, where) for row in [*found, *built])
    return bool(rows) and all(_a_row_container(resolver, r, s, depth) for r, s in rows)


def _built(func: Function, target: str) -> list[ast.expr] | None:
    """The rows that ``target = ModuleList([...])`` statements of ``func`` build with (a
    display's elements, a comprehension's element); ``None`` when they cannot be read."""
    rows: list[ast.expr] = []
    for node in own_nodes(func.body):
        if not (isinstance(node, ast.Assign) and any(dotted(t) == target for t in node.targets)):
            continue
        value = node.value
        if not isinstance(value, ast.Call) or len(value.args) > 1 or value.keywords:
            return None
        if not value.args:
            continue
        arg = value.args[0]
        if isinstance(arg, (ast.List, ast.Tuple)):
            rows.extend(arg.elts)
        elif isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
            rows.append(arg.elt)
        else:
            return None
    return rows


def _a_row_container(resolver: Context, row: ast.expr, scope: Scope, depth: int) -> bool:
    """``ModuleList([...])`` or ``nn.Sequential(...)`` (a call of a torch container class
    that holds its modules as a list)."""
    if not isinstance(row, ast.Call):
        return False
    name = (dotted(row.func) or "").rpartition(".")[2]
    return name in _ROW_CONTAINERS and resolver.resolve(row, scope, depth + 1).container
