"""Resolve type annotations: ``nn.Module``, ``Optional[X]``, ``X | None``, ``list[X]``."""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import PyFile
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import imported_name
from hookscope.lint.python.resolution.kinds import UNKNOWN, Kind, Resolved


def instance_class(pyfile: PyFile, index: ClassIndex, name: str) -> str:
    """The class name of an instance of ``name``, for attribute look-ups; ``""`` if unknown:
    a class of this file or of the project index, or ``ExportedProgram`` (for its
    ``.module()``, a GraphModule)."""
    last = name.rsplit(".", 1)[-1]
    if last in pyfile.classes or last in index:
        return last
    return "ExportedProgram" if last == "ExportedProgram" else ""


# Generics whose last argument is the type of their elements.
_COLLECTIONS = known.names("list List Sequence Iterable Iterator tuple Tuple dict Dict Mapping")
# Modules whose names in an annotation are typing constructs, not classes of the project.
_TYPING_MODULES = frozenset({"typing", "typing_extensions", "collections.abc"})


def annotation_kind(resolver: Context, node: ast.expr) -> Resolved:
    """Resolve a type annotation: ``nn.Module``, ``Optional[X]``, ``X | None``, ``list[X]``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            parsed = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return UNKNOWN
        return annotation_kind(resolver, parsed)
    if isinstance(node, ast.Constant) and node.value is None:
        return Resolved(Kind.OTHER, name="None")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union(resolver, [node.left, node.right])
    if isinstance(node, ast.Subscript):
        base = (dotted(node.value) or "").rsplit(".", 1)[-1]
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base in ("Optional", "Union"):
            return _union(resolver, args)
        if base in _COLLECTIONS:
            return Resolved(Kind.OTHER, elem=annotation_kind(resolver, args[-1]).kind)
        if base in ("type", "Type"):
            return replace(annotation_kind(resolver, args[0]), is_class=True)
        node = node.value
    path = dotted(node)
    if path is None:
        return UNKNOWN
    # spelled through the file's imports: ``HookedTransformer`` → ``transformer_lens.
    # HookedTransformer``, a library's module class, or the project class an import names
    spelled = resolver.imported((path,))[0]
    if spelled.rpartition(".")[0] in _TYPING_MODULES:
        return UNKNOWN  # ``Any``, ``Callable``: never the project's classes of that name
    kind, container = resolver.class_kind(spelled)
    if kind is Kind.UNKNOWN and spelled != path and "." in spelled:
        aliased = imported_name(resolver, spelled, 0)  # ``Ctx = LossContext`` there
        if aliased.is_class and aliased.kind is not Kind.UNKNOWN:
            return replace(aliased, is_class=False, via="")
    cls = instance_class(resolver.file, resolver.index, path)
    return Resolved(kind, container=container, name=path.rsplit(".", 1)[-1], cls=cls)


def _union(resolver: Context, members: list[ast.expr]) -> Resolved:
    results = [r for r in (annotation_kind(resolver, m) for m in members) if r.name != "None"]
    return results[0] if len({r.kind for r in results}) == 1 else UNKNOWN
