"""Class methods that build instances: a ``@classmethod`` returning ``cls(...)`` builds
the class it is called on (``Net.build(cfg)``), followed through ``super().build(cfg)``
into the bases, in this file or in the project files that define them.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.classes import base_names
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign, foreign_in
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, Kind, Resolved
from hookscope.lint.python.resolution.typehints import instance_class


def own_methods(cls: ast.ClassDef) -> dict[str, Function]:
    """The methods ``cls`` defines in its body, by name."""
    return {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


def is_property(func: Function) -> bool:
    """``@property`` / ``@functools.cached_property``: reading the attribute calls it."""
    return _decorated(func, ("property", "cached_property"))


def is_staticmethod(func: Function) -> bool:
    """``@staticmethod``: called on its class, it is a plain function."""
    return _decorated(func, ("staticmethod",))


def _decorated(func: Function, names: tuple[str, ...]) -> bool:
    return any((dotted(d) or "").rsplit(".", 1)[-1] in names for d in func.decorator_list)


def is_classmethod(func: ast.AST | None) -> bool:
    """Whether ``func`` is decorated ``@classmethod``."""
    return any(dotted(d) == "classmethod" for d in getattr(func, "decorator_list", ()))


def find_method(
    resolver: Context, cls_name: str, name: str, seen: frozenset[str] = frozenset()
) -> tuple[Context, Function] | None:
    """The method ``name`` of the class ``cls_name`` or of its nearest base that has one,
    with the resolver of the file that defines it."""
    cls = resolver.file.classes.get(cls_name)
    if cls is None:
        other = foreign(resolver, cls_name)
        return None if other is None else find_method(other, cls_name, name, seen)
    if cls_name in seen:
        return None
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return resolver, stmt
    return _in_bases(resolver, cls, name, seen | {cls_name})


def _in_bases(
    resolver: Context, cls: ast.ClassDef, name: str, seen: frozenset[str]
) -> tuple[Context, Function] | None:
    for base in base_names(cls):
        imported = imported_base(resolver, base)
        if imported is not None:
            found = find_method(imported[0], imported[1], name, seen)
        else:
            found = find_method(resolver, base.rsplit(".", 1)[-1], name, seen)
        if found is not None:
            return found
    return None


def imported_base(resolver: Context, base: str) -> tuple[Context, str] | None:
    """A base imported by its own name from a project module (``from pkg.train import
    Trainer``) when several project files define a class so named: the resolver of the
    file that module names, and the name; ``None`` otherwise."""
    if "." in base or len(resolver.index.defs.get(base, ())) < 2 or base in resolver.file.classes:
        return None
    module, _, name = resolver.imported((base,))[0].rpartition(".")
    other = foreign_in(resolver, name, module) if module and name == base else None
    return None if other is None else (other, name)


def built_by_classmethod(
    resolver: Context, func: ast.Attribute, scope: Scope, depth: int
) -> Resolved | None:
    """What ``Cls.method(...)`` or ``super().method(...)`` returns when ``method`` is a
    class method of a known class (or, called on the class, a static method:
    ``ModelFactory.get_model(...)``); ``None`` when it is not one."""
    receiver = func.value
    if isinstance(receiver, ast.Call) and dotted(receiver.func) == "super":
        if scope.cls is None or not is_classmethod(scope.method):
            return None
        located = _in_bases(resolver, scope.cls, func.attr, frozenset({scope.cls.name}))
        cls_name, owner_named = scope.cls.name, False
    else:
        owner = resolver.resolve(receiver, scope, depth + 1)
        if not owner.is_class or owner.kind is Kind.UNKNOWN or not owner.name:
            return None
        cls_name, owner_named = owner.name.rsplit(".", 1)[-1], True
        located = find_method(resolver, cls_name, func.attr)  # (a static method too)
    if located is None or not (
        is_classmethod(located[1]) or (owner_named and is_staticmethod(located[1]))
    ):
        return None
    where, method = located
    result = where.returns_of(method, depth + 1)
    if result.kind is Kind.UNKNOWN or result.is_class:
        return None
    shown = f"{cls_name}.{method.name}() at {where.file.path}:{method.lineno}"
    if is_staticmethod(method):  # a factory: what it returns, not an instance of its class
        shown = f" ({result.via})" if result.via else ""
        via = f"static {cls_name}.{method.name}() returns it{shown}"
        return replace(result, name=func.attr, via=via)
    cls = instance_class(resolver.file, resolver.index, cls_name) or result.cls
    return replace(result, name=func.attr, cls=cls, via=f"classmethod {shown} returns an instance")


def method_value(resolver: Context, cls_name: str, name: str, depth: int) -> Resolved | None:
    """What an instance of the project class ``cls_name`` gives through its method ``name``
    (its own or a base's, in any project file), when known: ``obj[key]`` through
    ``__getitem__``, ``obj.name`` through a property."""
    located = find_method(resolver, cls_name, name)
    if located is None or depth >= MAX_DEPTH:
        return None
    owner, method = located
    if name != "__getitem__" and not is_property(method):
        return None
    result = owner.returns_of(method, depth + 1)
    if result.kind is Kind.UNKNOWN or result.is_class:
        return None
    where = f"{owner.file.path}:{method.lineno}"
    shown = f" ({result.via})" if result.via else ""
    return replace(result, via=f"{cls_name}.{name} at {where} returns it{shown}")
