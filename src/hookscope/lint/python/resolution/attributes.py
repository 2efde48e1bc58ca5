"""Attributes of instances of a class: where ``obj.x`` was bound, for the resolver: the
class's ``self.x = ...`` assignments, annotations and body, then its bases (same file, an
import, or another file), and for a mixin that assigns none, its subclasses.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from hookscope.lint.python.parse.attributes import class_attributes
from hookscope.lint.python.parse.bindings import Binding
from hookscope.lint.python.resolution.classes import base_names, descendants
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import aliased_base, foreign
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, Kind, Resolved
from hookscope.lint.python.resolution.methods import find_method, imported_base


def class_attr(
    resolver: Context, cls_name: str, attr: str, seen: set[str] | None = None
) -> tuple[Context, list[Binding]]:
    """The bindings of ``attr`` on instances of ``cls_name`` (bases included), with the
    resolver of the file they were made in. ``seen``: the ``path:class`` this search has
    been to, each once (the bases of namesakes in a big tree reach one by many paths);
    ``None`` for a search of its own, which also looks in the subclasses of its file."""
    top, seen = seen is None, set() if seen is None else seen
    if f"{resolver.file.path}:{cls_name}" in seen:
        return resolver, []
    seen.add(f"{resolver.file.path}:{cls_name}")
    cls = resolver.file.classes.get(cls_name)
    if cls is None:
        return _indexed_attr(resolver, cls_name, attr, seen, top)
    attrs = resolver.class_attrs.get(cls_name)
    if attrs is None:
        attrs = resolver.class_attrs[cls_name] = class_attributes(cls)
    found = attrs.get(attr)
    if found:
        return resolver, found
    for base in base_names(cls):
        other = aliased_base(resolver, base) or imported_base(resolver, base)
        if other is not None:  # ``from pkg.mod import Net as NetBase``: pkg/mod.py's Net
            owner, found = class_attr(other[0], other[1], attr, None if top else seen)
        else:
            owner, found = class_attr(resolver, base.rsplit(".", 1)[-1], attr, seen)
        if found:
            return owner, found
    return resolver, _in_subclasses(resolver, cls_name, attr) if top else []


def _in_subclasses(resolver: Context, cls_name: str, attr: str) -> list[Binding]:
    """``attr`` that a mixin uses and only its subclasses in this file assign."""
    out = []
    for other in resolver.file.classes.values():
        if cls_name in {b.rsplit(".", 1)[-1] for b in base_names(other)}:
            seen = {f"{resolver.file.path}:{cls_name}"}
            owner, found = class_attr(resolver, other.name, attr, seen)
            out.extend(found if owner is resolver else [])
    return out


def _indexed_attr(
    resolver: Context, cls_name: str, attr: str, seen: set[str], top: bool
) -> tuple[Context, list[Binding]]:
    """``attr`` of a class in another file: its ``self.attr: T`` annotation in the
    project-wide index, else what the file that defines the class assigns (a search of
    its own there, for a search of its own here)."""
    source = resolver.index.attrs.get(cls_name, {}).get(attr)
    if source is not None:
        try:
            annotation = ast.parse(source.strip(), mode="eval").body
        except SyntaxError:
            return resolver, []
        return resolver, [Binding("annotation", annotation, resolver.file.tree)]
    other = foreign(resolver, cls_name)
    if other is not None:
        return class_attr(other, cls_name, attr, None if top else seen)
    for bases in resolver.index.get(cls_name) or ():
        for base in bases:
            owner, found = class_attr(resolver, base.rsplit(".", 1)[-1], attr, seen)
            if found:
                return owner, found
    return resolver, []


def is_none_binding(binding: Binding) -> bool:
    """``x = None`` (or the class placeholder ``x = type(None)``): a placeholder that no
    ``.forward(...)`` call can have reached."""
    expr = binding.expr
    if binding.kind != "value":
        return False
    if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords:
        is_type = isinstance(expr.func, ast.Name) and expr.func.id == "type"
        expr = expr.args[0] if is_type else expr
    return isinstance(expr, ast.Constant) and expr.value is None


def in_subclasses(
    resolver: Context, cls_name: str, attr: str, depth: int, *, placeholder: bool = False
) -> Resolved | None:
    """``attr`` that neither ``cls_name`` nor its bases bind, on an instance typed as
    ``cls_name``: what the project subclasses that bind it hold, when each resolves and all
    agree; ``None`` otherwise. ``placeholder``: the class binds ``attr`` only to ``None``
    (``self.clas = None`` in a base whose subclasses build it)."""
    name = re.escape(attr)  # ``self.x = ...``, ``x: T`` or ``def x(`` in this file's text:
    bound_here = re.compile(rf"\.{name}\s*(?::[^=\n]*)?=[^=]|\b{name}\s*:[^\n]|def\s+{name}\s*\(")
    if find_method(resolver, cls_name, attr) is not None:
        return None  # a method
    if not placeholder and bound_here.search(resolver.file.text):
        return None  # bound or defined here (a masked parse may lack it)
    subclasses = descendants(resolver.index, cls_name)
    if subclasses is None or depth >= MAX_DEPTH:
        return None
    results: list[Resolved] = []
    for child in subclasses:
        other = resolver if child in resolver.file.classes else foreign(resolver, child)
        if other is None:
            return None  # a namesake elsewhere, or unreadable
        owner, bindings = class_attr(other, child, attr)
        if bindings:
            results.append(owner.combine(bindings, depth + 1, f"{child}.{attr}"))
    if not results or len({(r.kind, r.is_class) for r in results}) != 1:
        return None
    first = results[0]
    if first.kind is Kind.UNKNOWN:
        return None
    shown = f" ({first.via})" if first.via else ""
    cls = first.cls if len({r.cls for r in results}) == 1 else ""
    via = f"every one of the {len(results)} subclass(es) of {cls_name} binding {attr} agrees{shown}"
    return replace(first, cls=cls, via=via)
