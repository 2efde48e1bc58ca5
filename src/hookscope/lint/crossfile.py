"""Resolution through other files of the project: factories and pytest fixtures.

What a function of another file returns is read from the project index (its
return annotation, or the calls every ``return`` makes); a parameter named like
a pytest fixture of the same file or of a ``conftest.py`` is what that fixture
returns.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import TYPE_CHECKING

from hookscope.lint import known
from hookscope.lint.bindings import dotted
from hookscope.lint.kinds import UNKNOWN, Kind, Resolved

if TYPE_CHECKING:
    from hookscope.lint.resolve import Resolver


def fixture(resolver: Resolver, name: str, depth: int) -> Resolved | None:
    """A parameter named like a pytest fixture of this file or of a ``conftest.py``."""
    pyfile = resolver.file
    for stmt in pyfile.tree.body:
        if (
            isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
            and stmt.name == name
            and any(_is_fixture(d) for d in stmt.decorator_list)
        ):
            result = resolver.returns_of(stmt, depth)
            where = f"{pyfile.path}:{stmt.lineno}"
            return replace(result, name=name, via=f"pytest fixture {name}() at {where}")
    if resolver.index.functions_in(name, "conftest"):
        result = factory_returns(resolver, f"conftest:{name}")
        return replace(result, name=name) if result.kind is not Kind.UNKNOWN else None
    return None


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (dotted(target) or "").endswith("fixture")


def factory_returns(resolver: Resolver, factory: str) -> Resolved:
    """What ``module:function`` of another project file returns, from the index."""
    module, _, name = factory.partition(":")
    chosen = resolver.index.functions_in(name, module) or resolver.index.functions.get(name, ())
    kinds = {_indexed_return(resolver, annotation, calls) for _, annotation, calls, _ in chosen}
    if len(kinds) != 1 or Kind.UNKNOWN in kinds:
        return UNKNOWN
    _, annotation, calls, where = chosen[0]
    shown = f"-> {annotation}" if annotation else f"returns {calls[0]}(...)"
    return Resolved(kinds.pop(), via=f"{name}() {shown} at {where}")


def _indexed_return(resolver: Resolver, annotation: str, calls: tuple[str, ...]) -> Kind:
    if annotation:
        try:
            node = ast.parse(annotation, mode="eval").body
        except SyntaxError:
            return Kind.UNKNOWN
        result = resolver.annotation(node)
        return Kind.UNKNOWN if result.is_class else result.kind
    kinds = {Kind.UNKNOWN} if not calls else set()
    for call in calls:
        owner, _, method = call.rpartition(".")
        name = owner if method.startswith(known.CONSTRUCTOR_PREFIXES) and owner else call
        last = name.rsplit(".", 1)[-1]
        is_class = last[:1].isupper() or last in resolver.index
        kinds.add(resolver.class_kind(last)[0] if is_class else Kind.UNKNOWN)
    return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
