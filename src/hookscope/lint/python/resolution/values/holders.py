"""Lists, dicts and list-like holders filled after they are made: ``layers = []`` then
``layers.append(Block())`` (`appends`), ``self.nets = Holder(self, "flow")`` then
``self.nets.append(Block())``, iterated or indexed like a list.

A holder is a project class, not a module, that defines ``append`` (storing what it is
given) and ``__getitem__`` or ``__iter__``; its elements are known when every appended
value resolves to one kind. One whose ``__init__`` appends its own arguments counts only
when the call passes none beyond its named parameters.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.bindings import Binding, dotted, own_nodes
from hookscope.lint.python.resolution.appends import filled_with
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.methods import own_methods


def appended(resolver: Context, binding: Binding, depth: int) -> Resolved | None:
    """The list or dict ``binding`` makes (an empty display) with the kind of what is appended
    to it; ``None`` when nothing is known of that."""
    target = _empty_target(binding)
    owner = binding.owner
    if target is None or not isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    filled = filled_with(resolver, target, owner, depth)
    if filled is None:
        return None
    kind, elem_cls, where = filled
    via = f"{target} = {'{}' if isinstance(binding.expr, ast.Dict) else '[]'} filled with {where}"
    return Resolved(Kind.OTHER, elem=kind, elem_cls=elem_cls, via=via)


def holder_items(resolver: Context, binding: Binding, made: Resolved, depth: int) -> Resolved:
    """``made`` (what ``binding``'s call gives) with the kind of its elements, when it is an
    instance of a same-file list-like holder class filled with one kind of values."""
    call = binding.expr
    if (
        made.kind is not Kind.OTHER
        or not made.cls
        or made.is_class
        or made.elem is not None
        or not isinstance(call, ast.Call)
        or not isinstance(binding.owner, (ast.FunctionDef, ast.AsyncFunctionDef))
    ):
        return made
    target = _target(binding)
    if target is None or f"{target.rpartition('.')[2]}.append(" not in resolver.file.text:
        return made  # (cheap: most instances of plain classes are never appended to)
    cls = resolver.file.classes.get(made.cls) or _other_file_class(resolver, made.cls)
    methods = own_methods(cls) if cls is not None else {}
    append = methods.get("append")
    if append is None or not ("__getitem__" in methods or "__iter__" in methods):
        return made
    if not _stores_argument(append) or not _own_arguments_only(methods.get("__init__"), call):
        return made
    filled = filled_with(resolver, target, binding.owner, depth)
    if filled is None:
        return made
    kind, elem_cls, where = filled
    via = f"{target} = {made.cls}(...), a list-like holder filled with {where}"
    return replace(made, elem=kind, elem_cls=elem_cls, via=via)


def _other_file_class(resolver: Context, name: str) -> ast.ClassDef | None:
    """The class ``name`` of the one other project file that defines a class so named."""
    other = foreign(resolver, name)
    return other.file.classes.get(name) if other is not None else None


def _stores_argument(append: Function) -> bool:
    """Whether ``append(self, item)`` hands ``item`` to a call or stores it in an item or
    attribute (``self.items.append(item)``, ``owner.add_module(name, item)``)."""
    params = [*append.args.posonlyargs, *append.args.args]
    if len(params) != 2:
        return False
    item = params[1].arg
    for node in own_nodes(append.body):
        if isinstance(node, ast.Call) and any(
            isinstance(a, ast.Name) and a.id == item for a in node.args
        ):
            return True
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == item
            and all(isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets)
        ):
            return True
    return False


def _own_arguments_only(init: Function | None, call: ast.Call) -> bool:
    """Whether the holder's ``__init__`` appends none of the call's arguments: it appends
    nothing, or the call passes no more than its named parameters (``*args`` empty)."""
    if init is None or not any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
        for n in own_nodes(init.body)
    ):
        return True
    named = len([*init.args.posonlyargs, *init.args.args]) - 1
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    return not starred and len(call.args) <= named


def _target(binding: Binding, annotated: bool = False) -> str | None:
    """``nets`` or ``self.nets``: what ``binding``'s value is assigned to (``annotated``:
    also in ``x: T = value``)."""
    for node in own_nodes(getattr(binding.owner, "body", [])):
        if isinstance(node, ast.Assign) and node.value is binding.expr and len(node.targets) == 1:
            return dotted(node.targets[0])
        if annotated and isinstance(node, ast.AnnAssign) and node.value is binding.expr:
            return dotted(node.target)
    return None


def _empty_target(binding: Binding) -> str | None:
    """``layers`` or ``self.blocks``: what ``binding`` (an empty list or dict) is assigned to."""
    value = binding.expr
    empty = (isinstance(value, ast.List) and not value.elts) or (
        isinstance(value, ast.Dict) and not value.keys
    )
    return _target(binding, True) if empty else None
