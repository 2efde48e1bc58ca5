"""Registries filled by class decorators: what ``REG.build(cfg)``, ``REG.get(name)`` and
``REG[name]`` give, in three shapes: a registry object (``@MODELS.register_module()``, then
``MODELS.build(cfg)`` or ``build_from_cfg(cfg, MODELS)``), a registry whose methods pair up
by name (``register_model`` fills ``get_model_class``), and a dict filled by a decorator
function. The registered classes come from a text scan of the project (once per index and
process); when all are of one kind, so is whatever the registry gives.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.source import DEFAULT_MAX_FILE_SIZE, Unreadable, read_bytes
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.kinds import Kind, Resolved

# A decorator line (its arguments may span lines), further decorators, then the class.
_DECORATED_CLASS = re.compile(
    rb"^[ \t]*@[ \t]*([\w.]+)[ \t]*(?:\((?:[^()]|\([^()]*\))*\))?[ \t]*(?:#[^\n]*)?\r?\n"
    rb"(?:[ \t]*@[^\n]*\r?\n)*[ \t]*class[ \t]+(\w+)",
    re.MULTILINE,
)
# Methods of registry objects that register a class when used as its decorator.
_REGISTERING = frozenset({"register_module", "register", "register_class", "register_model"})
# Functions that build an instance from a config and a registry given as an argument.
_BUILD_FROM = frozenset({"build_from_cfg", "build_from_config"})
REGISTRY_CALLS = frozenset({"build", "get", *_BUILD_FROM})
# A class getter of a method registry: ``get_model_class`` reads what ``register_model`` filled.
_GETTER = re.compile(r"get_(\w+?)_(?:class|cls)")


@dataclass(frozen=True)
class Registered:
    """The classes one decorator registers: ``(class name, module)`` each."""

    decorator: str
    classes: tuple[tuple[str, str], ...]


# decorator (as written, last two names at most) -> classes, for one index at a time
_SCANNED: dict[str, list[tuple[str, str]]] = {}
_SCANNED_INDEX: list[tuple[int, str, int]] = [(0, "", 0)]


def _decorated(index: ClassIndex) -> dict[str, list[tuple[str, str]]]:
    """``{decorator: [(class, module), ...]}`` over the project files defining classes."""
    stamp = (id(index), index.root, len(index.defs))  # an id alone may be reused
    if _SCANNED_INDEX[0] == stamp:
        return _SCANNED
    _SCANNED.clear()
    _SCANNED_INDEX[0] = stamp
    files = sorted({where.rpartition(":")[0] for defs in index.defs.values() for _, where in defs})
    for where in files:
        path = os.path.join(index.root, where) if index.root else where
        try:
            data = read_bytes(path, DEFAULT_MAX_FILE_SIZE)
        except Unreadable:
            continue
        if b"@" not in data:
            continue
        module = _module_of(where)
        for match in _DECORATED_CLASS.finditer(data):
            if _in_docstring(data, match.start()):
                continue  # a usage example in a docstring registers nothing
            decorator = match.group(1).decode("ascii", "replace")
            key = ".".join(decorator.split(".")[-2:])
            _SCANNED.setdefault(key, []).append((match.group(2).decode("ascii", "replace"), module))
    return _SCANNED


def _in_docstring(data: bytes, at: int) -> bool:
    """Whether ``at`` lies inside a triple-quoted string (an odd number of them before)."""
    return data.count(b'"""', 0, at) % 2 == 1 or data.count(b"'''", 0, at) % 2 == 1


def _module_of(where: str) -> str:
    """``pkg.mod`` of ``pkg/mod.py`` (``pkg`` of ``pkg/__init__.py``)."""
    stem = where.replace("\\", "/").removesuffix(".py").removesuffix("/__init__")
    return stem.strip("/").replace("/", ".")


def _kind_of(resolver: Context, classes: list[tuple[str, str]]) -> Kind | None:
    """The one kind of instances of ``classes``; ``None`` when they differ. At most one in
    ten may be unknown (a base from an unknown library) and none of another known kind."""
    kinds = [resolver.class_kind(name, module)[0] for name, module in classes]
    known_kinds = {k for k in kinds if k is not Kind.UNKNOWN}
    if len(known_kinds) != 1 or 10 * (len(kinds) - kinds.count(Kind.UNKNOWN)) < 9 * len(kinds):
        return None
    return known_kinds.pop()


def _object_registry(resolver: Context, name: str) -> Registered | None:
    """The classes registered with ``@name.register_module()`` and the like."""
    found = _decorated(resolver.index)
    classes = [c for method in _REGISTERING for c in found.get(f"{name}.{method}", ())]
    return Registered(f"@{name}.register...", tuple(classes)) if classes else None


def _dict_registry(resolver: Context, name: str) -> Registered | None:
    """The classes decorated with the function of this file that stores into the
    module-level dict ``name`` (``MODEL_REGISTRY[key] = cls`` in ``register_model``)."""
    if not any(
        b.kind == "value" and _is_empty_dict(b.expr)
        for b in resolver.bindings_of(resolver.file.tree).get(name, ())
    ):
        return None
    found = _decorated(resolver.index)
    for stmt in resolver.file.tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and _stores_into(stmt, name):
            # ``@register_model(...)``, or ``@models.register_model(...)`` through its module
            classes = [
                c
                for key, found_classes in found.items()
                if key.rpartition(".")[2] == stmt.name and key[:1].islower()
                for c in found_classes
            ]
            if classes:
                return Registered(f"@{stmt.name}(...)", tuple(classes))
    return None


def _is_empty_dict(expr: ast.expr | None) -> bool:
    if isinstance(expr, ast.Dict):
        return not expr.keys
    return isinstance(expr, ast.Call) and dotted(expr.func) == "dict" and not expr.args


def _stores_into(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``name[key] = param`` in ``func`` or a function nested in it, ``param`` being a
    parameter of the function that stores it (the decorated class)."""
    for node in ast.walk(func):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in [*node.args.posonlyargs, *node.args.args]}
        for stmt in ast.walk(node):
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Name)
                and stmt.value.id in params
                and any(
                    isinstance(t, ast.Subscript) and dotted(t.value) == name for t in stmt.targets
                )
            ):
                return True
    return False


def registry_class(resolver: Context, expr: ast.expr, scope: Scope) -> Resolved | None:
    """What ``expr`` (a registry: ``MODELS``, ``MODEL_REGISTRY``) holds, as a class."""
    name = (dotted(expr) or "").rsplit(".", 1)[-1]
    if not name or not name[:1].isupper():
        return None
    registered = _dict_registry(resolver, name) or _object_registry(resolver, name)
    if registered is None:
        return None
    kind = _kind_of(resolver, list(registered.classes))
    if kind is None:
        return None
    count = len(registered.classes)
    first, module = registered.classes[0]
    via = (
        f"registry {name}: the {count} class(es) registered with {registered.decorator} "
        f"are all of one kind ({kind.value}; e.g. {first} in {module})"
    )
    return Resolved(kind, is_class=True, name=name, via=via)


def is_registry_call(name: str) -> bool:
    """Whether a call of ``name`` may read a registry (see `built_by_registry`)."""
    return name in REGISTRY_CALLS or name.startswith("get_")


def _method_registry(resolver: Context, func: ast.Attribute) -> Resolved | None:
    """``registry.get_model_class(name)``: a class registered with
    ``@registry.register_model(...)`` (the getter and the decorator name one thing)."""
    match = _GETTER.fullmatch(func.attr)
    owner = (dotted(func.value) or "").rsplit(".", 1)[-1]
    if match is None or not owner:
        return None
    decorator = f"{owner}.register_{match.group(1)}"
    classes = _decorated(resolver.index).get(decorator)
    kind = _kind_of(resolver, classes) if classes else None
    if not classes or kind is None:
        return None
    first, module = classes[0]
    via = (
        f"{owner}.{func.attr}(...): the {len(classes)} class(es) registered with "
        f"@{decorator}(...) are all of one kind ({kind.value}; e.g. {first} in {module})"
    )
    return Resolved(kind, is_class=True, name=owner, via=via)


def built_by_registry(resolver: Context, call: ast.Call, scope: Scope) -> Resolved | None:
    """``REG.build(cfg)`` / ``build_from_cfg(cfg, REG)``: an instance of a registered
    class; ``REG.get(name)``, ``registry.get_model_class(name)``: one of the classes.
    ``None`` if not a known registry."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr.startswith("get_"):
        return _method_registry(resolver, func)
    if isinstance(func, ast.Attribute) and func.attr in ("build", "get"):
        held = registry_class(resolver, func.value, scope)
        if held is None or func.attr == "get":
            return held
    elif (dotted(func) or "").rsplit(".", 1)[-1] in _BUILD_FROM and len(call.args) >= 2:
        held = registry_class(resolver, call.args[1], scope)
        if held is None:
            return None
    else:
        return None
    return Resolved(held.kind, name=held.name, via=f"built by {held.via}")
