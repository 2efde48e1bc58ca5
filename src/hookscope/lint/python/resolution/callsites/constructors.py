"""Where a project class is built: calls of it and of the subclasses that inherit its
``__init__``, in the other files of the project. A plain base often takes the model while
its subclasses only add methods (``ActTrainer(model=model)`` runs ``Trainer.__init__``).
A name used otherwise than called, subclassed, imported, or named in ``isinstance``/
``issubclass``/``super(...)`` or an annotation makes the answer unknown (it may be built
out of sight), and so does a subclass with its own ``__init__``, unless that hands on
through one ``super().__init__(...)``: that call is then where the base is built.
"""

from __future__ import annotations

import ast
import os
import weakref
from collections.abc import Iterator

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import PyFile, Scope
from hookscope.lint.python.resolution.callsites.importers import (
    MAX_IMPORTERS,
    Site,
    defined_only_in,
    import_froms,
    import_names,
    importers,
    may_run,
    same_file,
)
from hookscope.lint.python.resolution.classes import descendants
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.crossfile import foreign_file
from hookscope.lint.python.resolution.methods import find_method

_INERT_CALLS = ("isinstance", "issubclass", "super")


def constructions(
    resolver: Context, cls: ast.ClassDef, init: Function, where: str
) -> Iterator[Site | None]:
    """Every call in the project that builds ``cls`` (defined at ``where``) or a subclass
    running its ``__init__``, with its resolver and scope: this file's first, then those of
    the files naming a class, read lazily. ``None`` for a call that cannot be seen."""
    yield from _sites_in(resolver, {cls.name: where})
    found = _inheriting(resolver, cls.name, init, where)
    if found is None:
        yield None
        return
    types, supers = found
    yield from supers  # ``super().__init__(model, lr)`` in a subclass's own ``__init__``
    subclasses = {name: defined for name, defined in types.items() if name != cls.name}
    if subclasses:
        yield from _sites_in(resolver, subclasses)
    stem = os.path.basename(where).removesuffix(".py")  # ``from pkg import nets`` ...
    through = importers(resolver.index, stem)  # ... and ``nets.Net(...)``
    files = {*(through if len(through) <= MAX_IMPORTERS else ())}
    for name, defined in types.items():
        files.update(importers(resolver.index, name))
        if name != cls.name:
            files.add(defined)
    if len(files) > MAX_IMPORTERS:
        yield None
        return
    for other_where in sorted(files):
        if same_file(resolver, other_where):
            continue  # read first
        other = foreign_file(resolver, other_where)
        if other is None:
            yield None  # unreadable
            return
        yield from _sites_in(other, types)


def _sites_in(other: Context, types: dict[str, str]) -> Iterator[Site | None]:
    """The calls in ``other`` of a class of ``types`` (``{class: its file}``)."""
    calls = _built_in(other, _local_names(other, types))
    if calls is None:
        yield None
        return
    for call, caller in calls:
        found = other.resolve(call.func, caller)
        defined = types.get(found.name) if found.is_class else None
        if defined is None or not (
            defined_only_in(other, found.name, defined)
            or may_run(other, call, caller, found.name, defined)
        ):
            yield None  # a namesake, or a class not resolved
            return
        yield other, call, caller


def _inheriting(
    resolver: Context, name: str, init: Function, where: str
) -> tuple[dict[str, str], list[Site]] | None:
    """``{class: the file defining it}`` for ``name`` and every project class deriving
    from it that runs ``init`` when built, and the ``super().__init__(...)`` calls of the
    subclasses whose own ``__init__`` hands on to ``init``; ``None`` when another comes between."""
    subclasses = descendants(resolver.index, name)
    if subclasses is None:
        return None
    out = {name: where}
    supers: list[Site] = []
    overriding: set[int] = set()
    for child in subclasses:  # (parents before their children)
        defs = resolver.index.defs.get(child, ())
        located = find_method(resolver, child, "__init__")
        if len(defs) != 1 or located is None:
            return None  # a namesake
        owner, method = located
        if id(method) in overriding:
            continue  # built through a subclass's ``__init__`` that hands on to ``init``
        if method.lineno != init.lineno:
            site = _super_init(owner, child, method, set(out), defs[0][0])
            if site is None:
                return None  # its own ``__init__``
            supers.append(site)
            overriding.add(id(method))
            continue
        if owner is not resolver and not same_file(resolver, owner.file.path):
            return None
        out[child] = defs[0][1].rpartition(":")[0]
    return out, supers


def _super_init(
    owner: Context, child: str, method: Function, parents: set[str], bases: tuple[str, ...]
) -> Site | None:
    """The one ``super().__init__(...)`` of ``child``'s own ``__init__`` (``method``, in the
    file of ``owner``), when ``child`` has one base and it is one of ``parents`` (so that
    the call runs their ``__init__``)."""
    if len(bases) != 1 or bases[0].rpartition(".")[2] not in parents:
        return None
    cls = owner.file.classes.get(child)
    if cls is None or method not in cls.body:
        return None
    calls = [
        node
        for node in ast.walk(method)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "__init__"
    ]
    if len(calls) != 1:
        return None
    call = calls[0]
    receiver = call.func.value  # type: ignore[attr-defined]
    if not isinstance(receiver, ast.Call) or dotted(receiver.func) != "super":
        return None
    return owner, call, owner.scope_of(method)


def _local_names(other: Context, types: dict[str, str]) -> set[str]:
    """The names that may stand for a class of ``types`` (``{class: its file}``) in
    ``other``: theirs, and those a file imports one of them as (``import Net as N``),
    less those it imports a namesake of another module as."""
    names = set(types)
    for node in import_froms(other.file.tree):
        for alias in node.names:
            local = alias.asname or alias.name
            if alias.name not in types:
                continue
            origin = f"{node.module or ''}.{alias.name}"
            if import_names(other, origin, alias.name, types[alias.name]):
                names.add(local)
            elif local in types:
                names.discard(local)
    return names


def _built_in(other: Context, types: set[str]) -> list[tuple[ast.Call, Scope]] | None:
    """The calls in ``other`` of a name in ``types`` (``Net(...)``, ``nets.Net(...)``);
    ``None`` when one of those names is used some other way (see the module docstring)."""
    found: list[tuple[ast.Call, Scope]] = []
    for name in types:
        called = other.calls_named(name)
        if called or name not in other.file.text:
            found.extend(called)  # (only called: `calls_by_name`, walked for other needs too)
            continue
        calls, used = _uses(other.file)  # named some other way too: a base, say
        if name in used:
            return None  # handed on, stored, or called out of sight
        found.extend(calls.get(name, ()))
    return sorted(found, key=lambda site: (site[0].lineno, site[0].col_offset))


Uses = tuple[dict[str, list[tuple[ast.Call, Scope]]], set[str]]
# tree -> its calls by the callee's last name, and the names it uses otherwise than as a
# callee, a base, an ``isinstance``/``issubclass``/``super`` argument or an annotation
# (kept while the tree lives: every class of a file is asked about with one walk)
_USES: weakref.WeakKeyDictionary[ast.AST, Uses] = weakref.WeakKeyDictionary()


def _uses(pyfile: PyFile) -> Uses:
    found = _USES.get(pyfile.tree)
    if found is not None:
        return found
    calls: dict[str, list[tuple[ast.Call, Scope]]] = {}
    used: set[str] = set()
    stack: list[tuple[ast.AST, Scope, bool]] = [
        (pyfile.tree, pyfile.scopes[id(pyfile.tree)], False)
    ]
    while stack:
        node, scope, inert = stack.pop()
        quiet: set[int] = set()  # children that name classes without using them
        if isinstance(node, ast.Call):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if last:
                calls.setdefault(last, []).append((node, scope))
                quiet.add(id(func))  # (what an attribute callee is read from still counts)
                if isinstance(func, ast.Attribute):
                    stack.append((func.value, scope, inert))
            if isinstance(func, ast.Name) and func.id in _INERT_CALLS:
                quiet.update(id(a) for a in node.args)
        elif isinstance(node, ast.ClassDef):
            quiet.update(id(b) for b in node.bases)
        elif isinstance(node, (ast.Name, ast.Attribute)) and not inert:
            used.add(node.id if isinstance(node, ast.Name) else node.attr)
        quiet.update(id(a) for a in _annotations(node))
        inner = pyfile.scopes.get(id(node), scope)
        for name in node._fields:  # (`ast.iter_child_nodes` without its generators)
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else (value,):
                if not isinstance(child, ast.AST) or (name == "func" and id(child) in quiet):
                    continue  # (the callee named: a call, not a use)
                stack.append((child, inner, inert or id(child) in quiet))
    found = _USES[pyfile.tree] = (calls, used)
    return found


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    return [node.annotation] if isinstance(node, ast.AnnAssign) else []
