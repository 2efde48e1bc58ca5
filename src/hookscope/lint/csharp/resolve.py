"""The declared type of a C# expression, from a tree-sitter tree and the project index.

Locals, parameters, ``foreach`` variables, ``is T x`` and ``out T x`` are read from the
enclosing member; fields, properties, method return types and indexers from the project
index, through the class hierarchy. Only declarations are read: a later assignment does
not change a variable's type, as in C#.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hookscope.lint.csharp import known as known
from hookscope.lint.csharp.index import PREFIX
from hookscope.lint.csharp.types import CsType, Hierarchy, deconstruct, element_type, parse_type

_SCOPES = known.names(
    """
    block for_statement foreach_statement using_statement fixed_statement catch_clause
    switch_section lambda_expression anonymous_method_expression method_declaration
    constructor_declaration local_function_statement accessor_declaration operator_declaration
    conversion_operator_declaration destructor_declaration indexer_declaration compilation_unit
    """
)
_TYPE_DECLARATIONS = known.names(
    """
    class_declaration struct_declaration record_declaration record_struct_declaration
    interface_declaration
    """
)
_MEMBER_PARENTS = frozenset({"declaration_list", "compilation_unit"})
_DEPTH = 12  # how many declarations one resolution may follow


@dataclass(frozen=True)
class Typed:
    """A resolved expression: its type (None when unknown) and how it was found."""

    type: CsType | None
    how: str = ""


_UNKNOWN = Typed(None)


@dataclass(frozen=True)
class _Declaration:
    """A variable declared in a member: where it is visible and how to type it."""

    name: str
    start: int  # byte offset of the declaration
    scope: tuple[int, int]  # byte range where the name is visible
    kind: str  # "local", "parameter", "foreach", "pattern"
    type: Any  # the tree-sitter type node (None for a lambda parameter)
    value: Any = None  # initializer, or the collection of a foreach
    position: int = -1  # element of a deconstructing foreach


class FileResolver:
    """Types of the expressions of one parsed C# file."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        self.hierarchy = hierarchy
        self._declarations: dict[int, dict[str, list[_Declaration]]] = {}

    def type_of(self, node: Any, depth: int = 0) -> Typed:
        """The declared type of an expression node."""
        if depth > _DEPTH:
            return _UNKNOWN
        kind = node.type
        if kind == "identifier":
            return self._name(node, depth)
        if kind in ("this_expression", "this"):
            classes = _enclosing_classes(node)
            return Typed(CsType(classes[0]), "this") if classes else _UNKNOWN
        if kind == "member_access_expression":
            return self._member(node, depth)
        if kind == "invocation_expression":
            return self._call(node.child_by_field_name("function"), depth)
        if kind in ("parenthesized_expression", "postfix_unary_expression"):
            inner = node.named_children
            return self.type_of(inner[0], depth + 1) if inner else _UNKNOWN
        if kind == "cast_expression":
            return self._written(node.child_by_field_name("type"), "cast")
        if kind == "as_expression":
            return self._written(node.child_by_field_name("right"), "`as`")
        if kind == "object_creation_expression":
            return self._written(node.child_by_field_name("type"), "`new`")
        if kind == "element_access_expression":
            return self._element(node, depth)
        if kind == "conditional_expression":
            return self._either(node, depth)
        return _UNKNOWN

    def _written(self, type_node: Any, how: str) -> Typed:
        if type_node is None:
            return _UNKNOWN
        ty = self._generic(parse_type(_text(type_node)), type_node)
        return Typed(ty, f"{how} {ty}") if ty is not None else _UNKNOWN

    def _generic(self, ty: CsType | None, node: Any) -> CsType | None:
        """A type parameter of an enclosing declaration becomes its constraint (or unknown)."""
        if ty is None or ty.args or ty.array:
            return ty
        for ancestor in _ancestors(node):
            lists = [c for c in ancestor.children if c.type == "type_parameter_list"]
            params = (
                [p.child_by_field_name("name") or p for p in lists[0].named_children]
                if lists
                else []
            )
            if ty.name not in (_text(p) for p in params):
                continue
            for clause in ancestor.children:
                if clause.type == "type_parameter_constraints_clause":
                    names = [c for c in clause.named_children if c.type == "identifier"]
                    if names and _text(names[0]) == ty.name:
                        for constraint in clause.named_children[1:]:
                            written = constraint.child_by_field_name("type")
                            if written is not None:
                                return parse_type(_text(written))
            return None
        return ty

    def _name(self, node: Any, depth: int) -> Typed:
        name = _text(node)
        declared = self._lookup(name, node)
        if declared is not None:
            return self._declared(declared, depth)
        for cls in _enclosing_classes(node):
            ty = self.hierarchy.member(cls, name)
            if ty is not None:
                return Typed(self._generic(ty, node), f"member {cls}.{name}: {ty}")
        return _UNKNOWN

    def _declared(self, decl: _Declaration, depth: int) -> Typed:
        line = f"line {decl.type.start_point[0] + 1}" if decl.type is not None else ""
        explicit = decl.type is not None and decl.type.type != "implicit_type"
        ty: CsType | None
        if decl.kind == "foreach" and not (explicit and decl.position < 0):
            items = element_type(self.type_of(decl.value, depth + 1).type, indexed=False)
            ty = deconstruct(items, decl.position) if decl.position >= 0 else items
        elif explicit:
            ty = self._generic(parse_type(_text(decl.type)), decl.type)
        elif decl.value is not None:
            ty = self.type_of(decl.value, depth + 1).type
        else:
            ty = None
        return Typed(ty, f"{decl.kind} `{decl.name}`: {ty} at {line}") if ty else _UNKNOWN

    def _member(self, node: Any, depth: int) -> Typed:
        target = node.child_by_field_name("expression")
        name = node.child_by_field_name("name")
        owner = self._owner(target, depth) if target is not None and name is not None else None
        if owner is None:
            return _UNKNOWN
        ty = self._generic(self.hierarchy.member(owner.name, _text(name)), node)
        how = f"member {owner.name}.{_text(name)}: {ty}"
        return Typed(ty, how) if ty is not None else _UNKNOWN

    def _owner(self, target: Any, depth: int) -> CsType | None:
        """The type whose members ``target.x`` reads: a variable's type or a static class."""
        if target.type == "base_expression" or _text(target) == "base":
            classes = _enclosing_classes(target)
            bases = self.hierarchy.index.get(PREFIX + classes[0]) if classes else None
            first = [parse_type(b[0]) for b in bases or () if b]
            return first[0] if first else None
        typed = self.type_of(target, depth + 1).type
        if typed is not None:
            return typed
        last = _text(target).rsplit(".", 1)[-1]
        return CsType(last) if self.hierarchy.is_class(last) else None

    def _call(self, function: Any, depth: int) -> Typed:
        if function is None:
            return _UNKNOWN
        if function.type in ("identifier", "generic_name"):
            name, args = _method(function)
            key = _key(name, args)
            classes = _enclosing_classes(function)
            for cls in classes:
                ty = self.hierarchy.member(cls, key)
                if ty is not None:
                    return Typed(self._generic(ty, function), f"{name}() returns {ty}")
            ty = self.hierarchy.method_anywhere(key[:-2])
            if ty is None and name in known.MODULES:
                ty = CsType(name)  # Linear(...) under `using static TorchSharp.torch.nn`
            return Typed(ty, f"{name}() returns {ty}") if ty is not None else _UNKNOWN
        if function.type != "member_access_expression":
            return _UNKNOWN
        target = function.child_by_field_name("expression")
        name, args = _method(function.child_by_field_name("name"))
        if name in known.SAME_TYPE:
            same = self.type_of(target, depth + 1)
            if same.type is not None:
                return same
        owner = self._owner(target, depth)
        if owner is None:
            return _UNKNOWN
        ty = self.hierarchy.member(owner.name, _key(name, args))
        if ty is None:
            ty = _library_call(owner, name, args)
        return Typed(ty, f"{owner.name}.{name}() returns {ty}") if ty is not None else _UNKNOWN

    def _element(self, node: Any, depth: int) -> Typed:
        target = node.child_by_field_name("expression")
        container = self.type_of(target, depth + 1).type if target is not None else None
        ty = element_type(container, indexed=True)
        if ty is None and container is not None:
            ty = self.hierarchy.member(container.name, "[]")
        return Typed(ty, f"element of {container}: {ty}") if ty is not None else _UNKNOWN

    def _either(self, node: Any, depth: int) -> Typed:
        branches = [node.child_by_field_name(f) for f in ("consequence", "alternative")]
        typed = [self.type_of(b, depth + 1) for b in branches if b and b.type != "null_literal"]
        names = {t.type.name if t.type else None for t in typed}
        return typed[0] if len(names) == 1 and None not in names else _UNKNOWN

    def _lookup(self, name: str, node: Any) -> _Declaration | None:
        member = _member_of(node)
        table = self._declarations.get(member.id)
        if table is None:
            table = self._declarations[member.id] = {}
            for decl in _collect(member):
                table.setdefault(decl.name, []).append(decl)
        at = node.start_byte
        visible = [d for d in table.get(name, ()) if d.scope[0] <= at < d.scope[1] and d.start < at]
        return max(visible, key=lambda d: d.start) if visible else None


def _library_call(owner: CsType, name: str, args: tuple[CsType, ...]) -> CsType | None:
    """The return type of a TorchSharp call outside the scanned tree, when known."""
    if (owner.name, name) in known.CALLS:  # jit.load<T, TResult>: ScriptModule<T, TResult>
        return CsType(known.CALLS[owner.name, name], args)
    if owner.name in known.STATIC_CLASSES and name in known.MODULES:
        return CsType(name)  # torch.nn.Linear(...) builds a Linear
    return None


def _method(node: Any) -> tuple[str, tuple[CsType, ...]]:
    """The name and type arguments of a called method (``load<Tensor, Tensor>``)."""
    if node.type != "generic_name":
        return _text(node), ()
    name, *rest = node.named_children
    written = [c for r in rest for c in r.named_children]
    return _text(name), tuple(t for t in map(parse_type, map(_text, written)) if t is not None)


def _key(name: str, args: tuple[CsType, ...]) -> str:
    """The index key of a method: ``name()``, or ``name<2>()`` with two type arguments."""
    return f"{name}<{len(args)}>()" if args else f"{name}()"


def _collect(member: Any) -> Iterator[_Declaration]:
    """Every variable declared inside one member (method, constructor, accessor...)."""
    stack = [member]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        kind = node.type
        if kind == "variable_declarator":
            declaration = node.parent
            name = node.child_by_field_name("name")
            if declaration is None or name is None or declaration.type != "variable_declaration":
                continue
            values = [c for c in node.named_children if c.id != name.id]
            yield _Declaration(
                _text(name),
                node.start_byte,
                _scope(node),
                "local",
                declaration.child_by_field_name("type"),
                values[-1] if values else None,
            )
        elif kind in ("parameter", "declaration_pattern", "declaration_expression"):
            name = node.child_by_field_name("name")
            if name is not None:
                label = "parameter" if kind == "parameter" else "pattern"
                typed = node.child_by_field_name("type")
                yield _Declaration(_text(name), node.start_byte, _scope(node), label, typed)
        elif kind == "foreach_statement":
            yield from _foreach(node)
        elif kind == "lambda_expression":
            single = node.child_by_field_name("parameters")
            if single is not None and single.type == "identifier":
                yield _Declaration(_text(single), node.start_byte, _range(node), "parameter", None)


def _foreach(node: Any) -> Iterator[_Declaration]:
    left = node.child_by_field_name("left")
    typed = node.child_by_field_name("type")
    right = node.child_by_field_name("right")
    if left is None or right is None:
        return
    scope = _range(node)
    if left.type == "identifier":
        yield _Declaration(_text(left), left.start_byte, scope, "foreach", typed, right)
        return
    names = [c for c in left.named_children if c.type == "identifier"]
    for position, name in enumerate(names):
        yield _Declaration(_text(name), name.start_byte, scope, "foreach", typed, right, position)


def _scope(node: Any) -> tuple[int, int]:
    for ancestor in _ancestors(node):
        if ancestor.type in _SCOPES:
            return _range(ancestor)
    return (0, 0)


def _range(node: Any) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def _ancestors(node: Any) -> Iterator[Any]:
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def _member_of(node: Any) -> Any:
    """The member (method, constructor, property, field) or top-level unit holding ``node``."""
    current = node
    for ancestor in _ancestors(node):
        if ancestor.type == "compilation_unit" and current.type == "global_statement":
            return ancestor  # top-level statements share one scope
        if ancestor.type in _MEMBER_PARENTS:
            return current
        current = ancestor
    return current


def _enclosing_classes(node: Any) -> list[str]:
    """Names of the type declarations around ``node``, innermost first."""
    names = []
    for ancestor in _ancestors(node):
        if ancestor.type in _TYPE_DECLARATIONS:
            name = ancestor.child_by_field_name("name")
            if name is not None:
                names.append(_text(name))
    return names


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "replace"))
