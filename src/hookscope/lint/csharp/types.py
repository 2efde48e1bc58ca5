"""C# type names and the class hierarchy: is a declared type a TorchSharp module?

A type is read from its source text (``torch.nn.Module<Tensor, Tensor>?``) into a
`CsType` (simple name, type arguments, array or not). `Hierarchy` tells, from the project
index and the known TorchSharp types, whether a type is a module, a member's declared
type and a method's return type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hookscope.lint.csharp import known as known
from hookscope.lint.csharp.index import PREFIX
from hookscope.lint.engine.index import ClassIndex

_TOKEN = re.compile(r"@?\w+|::|[<>,()\[\]?.*]")
_INTERFACE = re.compile(r"I[A-Z]")


@dataclass(frozen=True)
class CsType:
    """A C# type reduced to what hierarchy look-ups need.

    Attributes:
        name: the simple name, without namespace or type arguments; ``""`` for a tuple.
        args: the type arguments (the element types of a tuple).
        array: an array of ``name``.
    """

    name: str
    args: tuple[CsType, ...] = ()
    array: bool = False

    def __str__(self) -> str:
        inner = ", ".join(str(a) for a in self.args)
        text = f"({inner})" if not self.name else f"{self.name}<{inner}>" if inner else self.name
        return text + ("[]" if self.array else "")


def parse_type(text: str) -> CsType | None:
    """The `CsType` of a type as written, or None when it is not one."""
    tokens = _TOKEN.findall(text)
    parsed, end = _parse(tokens, 0)
    return parsed if end == len(tokens) else None


def _parse(tokens: list[str], i: int) -> tuple[CsType | None, int]:
    if i >= len(tokens):
        return None, i
    if tokens[i] == "(":
        elems, i = _list(tokens, i + 1, ")", names=True)
        ty = CsType("", tuple(elems)) if elems is not None else None
    elif tokens[i][-1].isalnum() or tokens[i][-1] == "_":
        name, i = tokens[i].lstrip("@"), i + 1
        args: tuple[CsType, ...] = ()
        while i < len(tokens):
            if tokens[i] == "<":
                parsed, i = _list(tokens, i + 1, ">", names=False)
                if parsed is None:
                    return None, i
                args = tuple(parsed)
            elif tokens[i] in (".", "::") and i + 1 < len(tokens):
                name, args, i = tokens[i + 1].lstrip("@"), (), i + 2  # Outer<T>.Inner
            else:
                break
        ty = CsType(name, args)
    else:
        return None, i
    while ty is not None and i < len(tokens) and tokens[i] in ("?", "[", "*"):
        if tokens[i] == "[":
            while i < len(tokens) and tokens[i] != "]":
                i += 1
            ty = CsType(ty.name, ty.args, array=True)
        i += 1
    return ty, i


def _list(tokens: list[str], i: int, close: str, names: bool) -> tuple[list[CsType] | None, int]:
    items: list[CsType] = []
    while i < len(tokens):
        item, i = _parse(tokens, i)
        if item is None:
            return None, i
        items.append(item)
        if names and i < len(tokens) and tokens[i] not in (",", close):
            i += 1  # a tuple element's name
        if i < len(tokens) and tokens[i] == ",":
            i += 1
        elif i < len(tokens) and tokens[i] == close:
            return items, i + 1
        else:
            return None, i
    return None, i


def element_type(ty: CsType | None, indexed: bool) -> CsType | None:
    """The type of ``x[i]`` (``indexed``) or of ``foreach (var e in x)``, for a known collection."""
    if ty is None:
        return None
    if ty.array:
        return CsType(ty.name, ty.args)
    if ty.name in known.SEQUENCES and ty.args:
        return ty.args[-1]
    if ty.name in known.MAPS and len(ty.args) == 2:
        return ty.args[1] if indexed else CsType("KeyValuePair", ty.args)
    if ty.name == "ModuleDict" and ty.args:
        return ty.args[0] if indexed else CsType("", (CsType("string"), ty.args[0]))
    return None


def deconstruct(ty: CsType | None, position: int) -> CsType | None:
    """The type of element ``position`` of ``var (a, b) = x`` / ``foreach (var (a, b) in ...)``."""
    if ty is not None and (ty.name == "" or ty.name == "KeyValuePair") and not ty.array:
        return ty.args[position] if position < len(ty.args) else None
    return None


class Hierarchy:
    """Module-ness of types, member types and method return types, from the project index."""

    def __init__(self, index: ClassIndex) -> None:
        self.index = index
        self._memo: dict[str, bool | None] = {}
        self._methods: dict[str, set[str]] | None = None

    def is_module(self, ty: CsType | None) -> bool | None:
        """True for a TorchSharp module with hooks, False for any other type, None when unknown."""
        if ty is None:
            return None
        if ty.array or not ty.name:
            return False
        if ty.name in known.GENERIC_ROOTS:  # hooks live on Module<T, TResult>, not on Module
            return len(ty.args) >= 2
        return self._class_is_module(ty.name)

    def _class_is_module(self, name: str) -> bool | None:
        if name in self._memo:
            return self._memo[name]
        if name in known.MODULE_ROOTS:
            return True
        definitions = self.index.get(PREFIX + name)
        if definitions is None:
            if name in known.MODULES:
                return True
            if name in known.NOT_MODULES or _INTERFACE.match(name):
                return False
            return None
        self._memo[name] = None  # a cycle in the hierarchy stays unknown
        verdicts = [
            self.is_module(base)
            for bases in definitions
            for base in map(parse_type, bases)
            if base is None or base.name != name  # Foo<T> : Foo
        ]
        result = True if True in verdicts else None if None in verdicts else False
        self._memo[name] = result
        return result

    def member(self, cls: str, name: str) -> CsType | None:
        """The declared type of ``cls.name`` (a field, property, ``name()`` method or ``[]``)."""
        seen: set[str] = set()
        todo = [cls]
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            declared = self.index.attrs.get(PREFIX + current, {}).get(name)
            if declared is not None:
                return parse_type(declared)
            for bases in self.index.get(PREFIX + current) or ():
                todo.extend(b.name for b in map(parse_type, bases) if b is not None)
        return None

    def method_anywhere(self, name: str) -> CsType | None:
        """The return type of every project method called ``name``, when they all agree."""
        if self._methods is None:
            self._methods = {}
            for cls, members in self.index.attrs.items():
                if cls.startswith(PREFIX):
                    for member, declared in members.items():
                        if member.endswith("()"):
                            self._methods.setdefault(member[:-2], set()).add(declared)
        found = [parse_type(d) for d in self._methods.get(name, ())]
        names = {t.name for t in found if t is not None}
        return found[0] if len(names) == 1 and None not in found else None

    def is_class(self, name: str) -> bool:
        """Whether ``name`` is a class of the project or of TorchSharp."""
        return PREFIX + name in self.index or name in known.MODULES or name in known.STATIC_CLASSES
