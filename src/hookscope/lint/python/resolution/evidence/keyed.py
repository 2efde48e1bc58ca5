"""Entries of a dict that the methods of one class family hand each other, and attributes
picked by name (``tagger = getattr(self, "_tagger_%s" % task)``: `getattrs`).

Meta-learning and GAN code keeps its networks in one dict (``model["net"] = Net(...)``)
that other methods take and call. The family's methods say what an entry holds: a
module-only method called on the same spelling, or a module assigned to it; an assignment
of anything else anywhere in the family vetoes it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from hookscope.lint.python.parse.pyfile import CallSite, Scope
from hookscope.lint.python.resolution.classes import base_names
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign
from hookscope.lint.python.resolution.getattrs import is_getattr, picked_submodule
from hookscope.lint.python.resolution.kinds import Kind, Resolved
from hookscope.lint.python.resolution.methods import imported_base
from hookscope.lint.python.resolution.uses import module_method


def keyed_entry(resolver: Context, receiver: ast.expr, site: CallSite) -> Resolved | None:
    """``holder["key"]`` in a method, shown a module by the methods of its class family
    (see the module docstring); ``None`` when nothing says so or anything says otherwise."""
    entry = _entry(receiver)
    cls = site.scope.cls
    if entry is None or cls is None:
        return None
    holder, key = entry
    evidence: Resolved | None = None
    for owner, family in _lineage(resolver, cls):
        for method in family.body:
            if not isinstance(method, Function):
                continue
            where = owner.scope_of(method)
            found = _in_method(owner, method, where, holder, key, family.name)
            if found is False:
                return None  # something else is stored under the key
            if evidence is None and isinstance(found, Resolved):
                evidence = found
    return evidence


def _in_method(
    owner: Context, method: ast.AST, where: Scope, holder: str, key: str, cls: str
) -> Resolved | bool | None:
    """What ``method`` says of ``holder[key]``: a module (how), ``False`` when it stores
    something else there, ``None`` when it says nothing."""
    evidence: Resolved | None = None
    shown = f"{holder}[{key!r}]"
    family = f"in {cls}.{getattr(method, 'name', '?')}, of the same class family"
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and any(_is(t, holder, key) for t in node.targets):
            stored = owner.resolve(node.value, where)
            if stored.kind is Kind.MODULE and not stored.is_class:
                via = f"{shown} = {ast.unparse(node.value)} at {owner.file.path}:{node.lineno}"
                evidence = evidence or Resolved(Kind.MODULE, name=key, via=f"{via}, {family}")
            elif stored.kind is not Kind.UNKNOWN or stored.is_class:
                return False
        elif (
            evidence is None
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _is(node.func.value, holder, key)
            and module_method(owner, node, where)
        ):
            via = f"{shown}.{node.func.attr}(...) at {owner.file.path}:{node.lineno}, {family}"
            evidence = Resolved(Kind.MODULE, name=key, via=f"{via}: only torch modules have it")
    return evidence


def _entry(node: ast.expr) -> tuple[str, str] | None:
    """``("model", "net")`` for ``model["net"]``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.value.id, node.slice.value
    return None


def _is(node: ast.expr, holder: str, key: str) -> bool:
    return _entry(node) == (holder, key)


def _delegates(owner: Context, cls: ast.ClassDef) -> list[tuple[Context, ast.ClassDef]]:
    """The project classes a method of ``cls`` hands its result to build: ``return
    helper.load_model(...)`` with ``helper = Maml(config)`` (the dict comes from there, laid
    out as that class lays it out)."""
    out: list[tuple[Context, ast.ClassDef]] = []
    for method in cls.body:
        if not isinstance(method, Function):
            continue
        for stmt in method.body:
            value = stmt.value if isinstance(stmt, ast.Return) else None
            if not (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and isinstance(value.func.value, ast.Name)
                and value.func.attr == method.name
            ):
                continue
            built = owner.resolve(value.func.value, owner.scope_of(method))
            name = built.cls
            if not name or built.is_class:
                continue
            local = owner.file.classes.get(name)
            other = owner if local is not None else foreign(owner, name)
            found = local or (other.file.classes.get(name) if other is not None else None)
            if other is not None and found is not None:
                out.append((other, found))
    return out


def _lineage(resolver: Context, cls: ast.ClassDef) -> Iterator[tuple[Context, ast.ClassDef]]:
    """``cls``, its project bases (through any number of files) and the classes its methods
    delegate to (`_delegates`), each with the resolver of its own file."""
    seen: set[int] = set()
    todo: list[tuple[Context, ast.ClassDef]] = [(resolver, cls)]
    while todo:
        owner, current = todo.pop()
        if id(current) in seen or len(seen) > 16:
            continue
        seen.add(id(current))
        yield owner, current
        todo.extend(_delegates(owner, current))
        for base in base_names(current):
            last = base.rsplit(".", 1)[-1]
            local = owner.file.classes.get(last)
            if local is not None and local is not current:
                todo.append((owner, local))
                continue
            imported = imported_base(owner, base)
            other, name = imported if imported is not None else (foreign(owner, last), last)
            found = other.file.classes.get(name) if other is not None else None
            if other is not None and found is not None:
                todo.append((other, found))


def picked_by_name(resolver: Context, receiver: ast.expr, site: CallSite) -> Resolved | None:
    """A name every binding of which is the same ``getattr(obj, <name>)`` call
    (``tagger = getattr(self, "_tagger_%s" % task)``): what `picked_submodule` says."""
    if not isinstance(receiver, ast.Name):
        return None
    bindings = resolver.bindings_of(site.scope.node).get(receiver.id, [])
    calls = {ast.dump(b.expr) for b in bindings if b.expr is not None}
    if not bindings or len(calls) != 1 or any(b.kind != "value" for b in bindings):
        return None
    call = bindings[0].expr
    if not isinstance(call, ast.Call) or not is_getattr(call):
        return None
    found = picked_submodule(resolver, call, site)
    if found is None:
        return None
    return Resolved(Kind.MODULE, name=receiver.id, via=f"{receiver.id} = {found.via}")
