"""Resolution through other files and imports: factories, fixtures, attributes, origins.
Another file is parsed on demand, once per process, and resolved in its own context.
"""

from __future__ import annotations

import ast
import os
from dataclasses import replace

from hookscope.lint.engine.index import FunctionEntry, defined_in
from hookscope.lint.engine.source import DEFAULT_MAX_FILE_SIZE, Unreadable, read_bytes
from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import dotted, returned
from hookscope.lint.python.parse.decode import decode_python
from hookscope.lint.python.parse.pyfile import PyFile, Scope
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, UNKNOWN, Kind, Resolved


def fixture_def(resolver: Context, name: str, scope: Scope) -> tuple[Context, Function] | None:
    """The pytest fixture ``name`` a parameter of ``scope`` receives (of the test class
    around it, of this file, or of a ``conftest.py``), with the resolver of its file."""
    stmt = _local_fixture(resolver, name, scope)
    if stmt is not None:
        return resolver, stmt
    if resolver.index.functions_in(name, "conftest"):
        return foreign_function(resolver, f"conftest:{name}")
    return None


def fixture(resolver: Context, name: str, scope: Scope, depth: int) -> Resolved | None:
    """A parameter named like a pytest fixture of the test class around ``scope`` (which
    shadows the others, as in pytest), of this file, or of a ``conftest.py``."""
    stmt = _local_fixture(resolver, name, scope)
    if stmt is not None:
        result = resolver.returns_of(stmt, depth)
        returns, yields = returned(stmt)
        if yields and not returns and result.elem is Kind.MODULE:
            result = Resolved(Kind.MODULE)  # a yield fixture: the test gets what it yields
        where = f"{resolver.file.path}:{stmt.lineno}"
        return replace(result, name=name, via=f"pytest fixture {name}() at {where}")
    if resolver.index.functions_in(name, "conftest"):
        yielded = _conftest_yield(resolver, name, depth)
        if yielded is not None:
            return yielded
        result = factory_returns(resolver, f"conftest:{name}")
        return replace(result, name=name) if result.kind is not Kind.UNKNOWN else None
    return None


def _conftest_yield(resolver: Context, name: str, depth: int) -> Resolved | None:
    """The module a yield fixture ``name`` of a ``conftest.py`` above this file yields
    (``model = get_model(...); yield model``); ``None`` when it is no such fixture."""
    entries = resolver.index.functions_in(name, "conftest")
    found = foreign_function(resolver, f"conftest:{name}") if len(entries) == 1 else None
    if found is None:
        return None
    other, stmt = found
    returns, yields = returned(stmt)
    here = os.path.dirname(resolver.where)
    above = os.path.dirname(entries[0][3].rpartition(":")[0])  # (from the root, as ``here``)
    if returns or not yields or not any(_is_fixture(d) for d in stmt.decorator_list):
        return None
    if above and os.path.commonpath([here, above]) != above:
        return None
    result = other.returns_of(stmt, depth)
    if result.elem is not Kind.MODULE:
        return None
    where = f"{other.file.path}:{stmt.lineno}"
    return Resolved(Kind.MODULE, name=name, via=f"pytest fixture {name}() at {where} yields one")


def _local_fixture(resolver: Context, name: str, scope: Scope) -> Function | None:
    """The fixture ``name`` of the test class around ``scope``, else of this file."""
    owners = [*([scope.cls] if scope.cls is not None else []), resolver.file.tree]
    for owner in owners:
        for stmt in resolver.file.body_by_name(owner).get(name, ()):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _is_fixture(d) for d in stmt.decorator_list
            ):
                return stmt
    return None


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (dotted(target) or "").endswith("fixture")


def factory_returns(resolver: Context, factory: str, depth: int = 0) -> Resolved:
    """What ``module:function`` of another project file returns: from the index (its
    annotation or returned calls), else from its body, read in its own file."""
    module, _, name = factory.partition(":")
    chosen = _chosen(resolver, name, module)
    kinds = {_indexed_return(resolver, annotation, calls) for _, annotation, calls, _ in chosen}
    if len(kinds) != 1 or Kind.UNKNOWN in kinds:
        found = foreign_function(resolver, factory) if depth < MAX_DEPTH else None
        return UNKNOWN if found is None else found[0].returns_of(found[1], depth + 1)
    _, annotation, calls, where = chosen[0]
    shown = f"-> {annotation}" if annotation else f"returns {calls[0]}(...)"
    kind = kinds.pop()
    cls = _annotated_class(resolver, annotation) if len(chosen) == 1 else ""
    return Resolved(kind, cls=cls, via=f"{name}() {shown} at {where}")


def _chosen(resolver: Context, name: str, module: str) -> tuple[FunctionEntry, ...]:
    """The project functions ``module:name`` may be: those of that module, else the one
    under that package (a name its ``__init__`` re-exports), else every one so named."""
    index = resolver.index
    found = index.functions_in(name, module, resolver.where)
    under = () if found else index.functions_under(name, module)
    return found or (under if len(under) == 1 else index.functions.get(name, ()))


def _annotated_class(resolver: Context, annotation: str) -> str:
    """The class an annotated return names (``-> Archive``), for its attributes."""
    try:
        node = ast.parse(annotation, mode="eval").body if annotation else None
    except SyntaxError:
        return ""
    return resolver.annotation(node).cls if node is not None else ""


def _indexed_return(resolver: Context, annotation: str, calls: tuple[str, ...]) -> Kind:
    if annotation:
        if annotation.rsplit(".", 1)[-1] in ("Any", "object"):
            return Kind.UNKNOWN  # ``typing.Any`` where it is written, whatever this file names so
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


# Resolvers of the files that define classes other files use, for one index at a time.
_FOREIGN: dict[str, Context | None] = {}
_FOREIGN_INDEX: list[int] = [0]


def foreign(resolver: Context, cls_name: str) -> Context | None:
    """A resolver for the one project file that defines ``cls_name``; ``None`` if there is
    no such single file (unknown, defined in several files, unreadable, this file)."""
    files = {where.rpartition(":")[0] for _, where in resolver.index.defs.get(cls_name, ())}
    return foreign_file(resolver, files.pop()) if len(files) == 1 else None


def imported_name(resolver: Context, origin: str, depth: int) -> Resolved:
    """What the name imported as ``origin`` (``pkg.mod.Name``) is: a class (its kind), a
    project function (a factory), or a module-level value of the project."""
    module, _, name = origin.rpartition(".")
    index = resolver.index
    function = name in index.functions and name not in index  # ``def GIN(p)``
    if not function and (name[:1].isupper() or name in index):  # or qExpectedImp...
        kind, container = resolver.class_kind(name, module)
        if kind is Kind.UNKNOWN and name not in index:
            # ``DEFAULT_NET``, or a class alias there (``CELossContext = LMHeadLossContext``)
            value = imported_value(resolver, module, name, depth)
            if value.kind is not Kind.UNKNOWN:
                return value
        via = resolver.installed.get(origin, "")  # read from an installed package
        return Resolved(kind, is_class=True, container=container, name=name, via=via)
    if name in index.functions:
        return Resolved(Kind.OTHER, name=name, factory=f"{module}:{name}")
    value = imported_value(resolver, module, name, depth)  # a module-level value
    return value if value.kind is not Kind.UNKNOWN else Resolved(Kind.UNKNOWN, name=name)


def imported_value(resolver: Context, module: str, name: str, depth: int) -> Resolved:
    """A module-level value ``name`` of the project module ``module`` (``from pkg.consts
    import DEFAULT_NET``), resolved in its own file: the module named from the project
    root, else (a relative import) from this file's folder."""
    other = imported_file(resolver, module) if depth < MAX_DEPTH else None
    bindings = other.bindings_of(other.file.tree).get(name) if other else None
    if other is None or not bindings:
        return UNKNOWN
    return other.combine(bindings, depth + 1, name)


def imported_file(resolver: Context, module: str) -> Context | None:
    """A resolver for the project file of ``module``: named from the project root, else
    (a relative import) from this file's folder; ``None`` if there is none."""
    if not module.strip("."):
        return None
    rel = module.strip(".").replace(".", "/")
    here = os.path.dirname(os.path.relpath(resolver.file.path, resolver.index.root or "."))
    for folder in ("", here):
        for candidate in (f"{rel}.py", f"{rel}/__init__.py"):
            where = os.path.normpath(os.path.join(folder, candidate))
            if os.path.isfile(os.path.join(resolver.index.root, where)):
                return foreign_file(resolver, where)
    return None


def foreign_in(resolver: Context, cls_name: str, module: str) -> Context | None:
    """A resolver for the project file of the module ``module`` that defines ``cls_name``."""
    files = {
        where.rpartition(":")[0]
        for _, where in resolver.index.defs.get(cls_name, ())
        if defined_in(where, module)
    }
    return foreign_file(resolver, files.pop()) if len(files) == 1 else None


def foreign_function(resolver: Context, factory: str) -> tuple[Context, Function] | None:
    """The definition of the project function ``module:name`` (one only) in its own file."""
    module, _, name = factory.partition(":")
    chosen = _chosen(resolver, name, module)
    if len(chosen) != 1:
        return None
    other = foreign_file(resolver, chosen[0][3].rpartition(":")[0])
    if other is None:
        return None
    for stmt in other.file.tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return other, stmt
    return None


def class_def_of(
    resolver: Context, name: str, where: str
) -> tuple[ast.ClassDef, str, ast.Module] | None:
    """The class statement ``name`` of the project file ``where``, that file's path and
    tree (``None``: unreadable, not a class there, or this file)."""
    other = foreign_file(resolver, where)
    found = other.file.classes.get(name) if other is not None else None
    if found is None or other is None:
        return None
    return found, other.file.path, other.file.tree


def foreign_file(resolver: Context, where: str) -> Context | None:
    """A resolver for the project file ``where`` (relative to the root), parsed once per
    index; ``None`` for this file or one that cannot be read."""
    path = os.path.join(resolver.index.root, where) if resolver.index.root else where
    if os.path.abspath(path) == os.path.abspath(resolver.file.path):
        return None
    if _FOREIGN_INDEX[0] != id(resolver.index):
        _FOREIGN.clear()
        _FOREIGN_INDEX[0] = id(resolver.index)
    if path not in _FOREIGN:
        _FOREIGN[path] = None  # also guards against cycles while parsing
        try:
            text = decode_python(read_bytes(path, DEFAULT_MAX_FILE_SIZE)).text
            pyfile = PyFile.parse(where, text)
        except (Unreadable, SyntaxError, ValueError, LookupError):
            return None
        _FOREIGN[path] = resolver.other(pyfile)
    return _FOREIGN[path]


def import_origin(resolver: Context, path: str, scope: Scope) -> str:
    """``path`` with its first name replaced by what an import bound it to
    (``models.resnet18`` after ``import torchvision.models as models``); ``""`` when
    that name is not (only) an import."""
    first, dot, rest = path.partition(".")
    current: Scope | None = scope
    while current is not None:
        if current is not scope and isinstance(current.node, ast.ClassDef):
            current = current.parent  # a method does not see its class's names (``def lpips``)
            continue
        bindings = resolver.bindings_of(current.node).get(first)
        if bindings:
            origins = {b.origin for b in bindings if b.kind in ("import", "namespace")}
            if len(origins) != 1 or len(bindings) != 1:
                return ""
            return f"{origins.pop()}{dot}{rest}"
        current = current.parent
    return ""


def module_function(resolver: Context, expr: ast.Attribute, scope: Scope) -> Resolved:
    """A function of a project module named through that module (``models.build``)."""
    prefix = dotted(expr.value)
    module = import_origin(resolver, prefix, scope) if prefix else ""
    if not module:
        return Resolved(Kind.UNKNOWN, name=expr.attr)
    found = resolver.index.functions_in(expr.attr, module)
    if not found and len(resolver.index.functions.get(expr.attr, ())) == 1:
        found = resolver.index.functions[expr.attr] if imported_file(resolver, module) else ()
    if not found and len(under := resolver.index.functions_under(expr.attr, module)) == 1:
        found = under  # one definition under the package: the name its __init__ re-exports
    if not found:
        return Resolved(Kind.UNKNOWN, name=expr.attr)
    return Resolved(Kind.OTHER, name=expr.attr, factory=f"{module}:{expr.attr}")


def aliased_base(resolver: Context, base: str) -> tuple[Context, str] | None:
    """A base imported under another name (``from pkg.mod import Net as NetBase``):
    the resolver of the project file defining it and its own name; else ``None``."""
    if "." in base:
        return None
    origin = resolver.imported((base,))[0]
    module, _, name = origin.rpartition(".")
    if not module or name == base:
        return None
    other = foreign_in(resolver, name, module)
    return None if other is None else (other, name)
