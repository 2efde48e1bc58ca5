"""What a call gives: constructors, factories, pass-through and self-returning calls,
registries, class methods that build instances, and project functions' returns."""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.python.facts import known, libraries
from hookscope.lint.python.index.installed import EVIDENCE_PREFIX
from hookscope.lint.python.parse.bindings import dotted, returned
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import (
    factory_returns,
    foreign_function,
    import_origin,
)
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, UNKNOWN, Kind, Resolved
from hookscope.lint.python.resolution.literals import (
    contents,
    copied_elements,
    entry_of,
    getattr_value,
    literal_element,
    named_display,
    picks_from,
    rref_value,
)
from hookscope.lint.python.resolution.methods import (
    built_by_classmethod,
    find_method,
    is_classmethod,
)
from hookscope.lint.python.resolution.registries import built_by_registry, is_registry_call
from hookscope.lint.python.resolution.signatures import argument_for
from hookscope.lint.python.resolution.third_party import installed_return
from hookscope.lint.python.resolution.typehints import instance_class

_SELF_RETURNING = known.names(
    "to cuda cpu eval train half float double bfloat16 requires_grad_ to_empty share_memory"
)
# Calls that return their first argument (or a copy of it): ``weight_norm(m)`` is ``m``.
_PASS_THROUGH = frozenset(
    {"deepcopy", "copy", "compile", "cast", "weight_norm", "spectral_norm", "remove_weight_norm"}
)


def call_result(resolver: Context, expr: ast.Call, scope: Scope, depth: int) -> Resolved:
    """What the call ``expr`` gives, evaluated in ``scope``."""
    func = expr.func
    if isinstance(func, ast.Name) and func.id == "type" and len(expr.args) == 1:
        return replace(resolver.resolve(expr.args[0], scope, depth + 1), is_class=True)
    last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if isinstance(func, ast.Name) and func.id == "getattr":
        return getattr_value(resolver, expr, scope, depth)
    if isinstance(func, (ast.Subscript, ast.Call, ast.Name)):
        built = _entries_called(resolver, func, scope, depth)
        if built is not None:  # ``MODELS[name](cfg)``: what every entry of the table builds
            return built
    if isinstance(func, ast.Name) and len(expr.args) == 1 and picks_from(expr):
        copied = copied_elements(resolver, func.id, expr.args[0], scope, depth)
        if copied is not None:  # ``list(model.children())[0]``, ``next(iter(...))``
            return copied
    if last == "cast" and len(expr.args) == 2 and _typing_cast(resolver, func, scope):
        return resolver.annotation(expr.args[0])  # ``cast(nn.Module, m)``: typed so
    if last in _PASS_THROUGH and expr.args:
        given = resolver.resolve(expr.args[0], scope, depth + 1)
        if given.kind is Kind.OTHER and not given.is_class and depth < MAX_DEPTH:
            # ``compile(exported_program)`` of a project that defines ``compile``: what its
            # definition returns (an fx ``GraphModule``), when that is a module
            own = _project_function_result(resolver, func, expr, scope, depth)
            return own if own is not None else given
        return given
    if last in known.MODULE_PASS_THROUGH and expr.args:
        given = resolver.resolve(expr.args[0], scope, depth + 1)
        if given.kind is Kind.MODULE and not given.is_class:
            shown = f" ({given.via})" if given.via else ""
            return replace(given, name=last, via=f"{last}(...) returns the module given{shown}")
    if last == "partial" and expr.args:  # partial(Block, dim=8) builds what Block builds
        made = resolver.resolve(expr.args[0], scope, depth + 1)
        return made if made.is_class or made.function or made.factory else UNKNOWN
    if last == "get" and isinstance(func, ast.Attribute) and _no_default(expr):
        entry = _dict_entry(resolver, func.value, scope, depth)
        if entry is not None:  # ``{"a": ClassA, ...}.get(name)``: one of the entries
            return entry
    if isinstance(func, ast.Attribute) and last in _SELF_RETURNING:
        inner = resolver.resolve(func.value, scope, depth + 1)
        if (inner.kind is Kind.MODULE or inner.foreign) and not inner.is_class:
            return inner
    if last in known.RREF_VALUE and isinstance(func, ast.Attribute):
        return rref_value(resolver, func.value, scope, depth + 1)
    if last == "get_submodule":
        return Resolved(Kind.MODULE, name=last)
    if last == "module" and isinstance(func, ast.Attribute):
        owner = resolver.resolve(func.value, scope, depth + 1)
        if owner.cls == "ExportedProgram" and not owner.is_class:
            return Resolved(Kind.MODULE, name=last, via="ExportedProgram.module() is a GraphModule")
    path = dotted(func) or ""
    if path in known.MODULE_FACTORIES or f".{path}".endswith(known.MODULE_FACTORY_SUFFIXES):
        return Resolved(Kind.MODULE, name=last, via=f"{path}(...) returns a module")
    origin = import_origin(resolver, path, scope) if path else ""
    if origin and libraries.not_module_package(origin.rpartition(".")[0]):
        # ``cv2.dnn.readNet(p)``, ``cpp_extension.load(...)``, ``onnxruntime.InferenceSession``
        via = f"{origin}(...) gives no torch module"
        # (a skorch net holds its torch module as ``net.module_``: only a package whose
        # objects are all foreign makes their attributes so too)
        foreign = libraries.not_module_package(origin.rpartition(".")[0])
        return Resolved(Kind.OTHER, name=last, via=via, foreign=foreign)
    returned = installed_return(resolver.index.root, resolver.file.path, origin) if origin else None
    if returned is not None:  # ``def resnet50(...) -> ResNet`` of an installed package
        return Resolved(returned[0], name=last, via=returned[1])
    package = _named_dynamically(func)  # ``getattr(models, arch)(...)``
    package = import_origin(resolver, package, scope) if package else ""
    if package in libraries.MODEL_FUNCTION_PACKAGES:
        return Resolved(Kind.MODULE, name=last, via=f"a builder of {package} builds a model")
    if package in libraries.MODULE_CLASS_PACKAGES:  # ``getattr(nn, norm)(dim)``
        return Resolved(Kind.MODULE, name=last, via=f"a class of {package} is a module")
    if (
        isinstance(func, ast.Attribute)
        and last in libraries.AUTO_LOADERS
        and libraries.auto_model_class(dotted(func.value) or "")
    ):
        return Resolved(Kind.MODULE, name=last, via=f"{path}(...) loads a model (an auto class)")
    if isinstance(func, ast.Attribute) and last.startswith(known.CONSTRUCTOR_PREFIXES):
        # ``object.__new__(Cls)`` / ``Cls.__new__(Cls)``: an instance of its argument
        of = func.value if last != "__new__" or not expr.args else expr.args[0]
        owner = resolver.resolve(of, scope, depth + 1)
        if owner.is_class and owner.kind is not Kind.UNKNOWN:
            return replace(
                owner,
                is_class=False,
                name=last,
                cls=instance_class(resolver.file, resolver.index, owner.name),
            )
    if isinstance(func, ast.Attribute):
        built = built_by_classmethod(resolver, func, scope, depth)
        if built is not None:
            return built
    if is_registry_call(last):
        built = built_by_registry(resolver, expr, scope)
        if built is not None:
            return built
    if isinstance(func, ast.Attribute):
        inherited = _inherited_method(resolver, func, scope, depth)
        if inherited is not None:
            return inherited
    callee = resolver.resolve(func, scope, depth + 1)
    handed = handed_back(resolver, callee, expr, scope, depth)
    if handed is not None:
        return replace(handed, name=last)
    if callee.function is not None:
        return replace(resolver.returns_of(callee.function, depth), name=last)
    if callee.factory:
        return replace(factory_returns(resolver, callee.factory, depth + 1), name=last)
    if path.endswith("export.export"):  # torch.export.export(...): an ExportedProgram
        return Resolved(Kind.OTHER, name=last, cls="ExportedProgram")
    if callee.is_class:
        return Resolved(
            callee.kind,
            via=callee.via if callee.via.startswith(EVIDENCE_PREFIX) else "",
            container=callee.container,
            elem=contents(resolver, expr, scope, depth) if callee.container else None,
            name=callee.name,
            cls=instance_class(resolver.file, resolver.index, callee.name),
        )
    return Resolved(Kind.UNKNOWN, name=last)


def _typing_cast(resolver: Context, func: ast.expr, scope: Scope) -> bool:
    origin = import_origin(resolver, dotted(func) or "", scope)
    return origin in ("typing.cast", "typing_extensions.cast")


def _entries_called(
    resolver: Context, func: ast.Subscript | ast.Call | ast.Name, scope: Scope, depth: int
) -> Resolved | None:
    """``table[key](...)`` / ``table.get(key)(...)`` of a table written out here or in the
    file it is imported from (``{"gcn": GCN, "gat": make_gat}``): what calling every entry
    gives when they agree; `UNKNOWN` when they do not, ``None`` for no such entry."""
    if isinstance(func, ast.Name):  # ``make = MODELS[name]`` ... ``make(cfg)``
        bindings = resolver.bindings_of(scope.node).get(func.id, [])
        value = bindings[0].expr if len(bindings) == 1 and bindings[0].kind == "value" else None
        if not isinstance(value, (ast.Subscript, ast.Call)):
            return None
        return _entries_called(resolver, value, resolver.scope_of(bindings[0].owner), depth)
    if isinstance(func, ast.Subscript) and not isinstance(func.slice, ast.Slice):
        table = func.value
    elif (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Attribute)
        and func.func.attr == "get"
        and _no_default(func)
    ):
        table = func.func.value
    else:
        return None
    if isinstance(table, (ast.Dict, ast.List, ast.Tuple)):
        owner, literal, where = resolver, table, scope
    elif isinstance(table, ast.Name):
        display = named_display(resolver, table, scope)
        if display is None:
            return None
        owner, literal, where = display[0], display[1], display[0].scope_of(display[2])
    else:
        return None
    entries = literal.values if isinstance(literal, ast.Dict) else literal.elts
    if not entries or (isinstance(literal, ast.Dict) and None in literal.keys):
        return None  # filled elsewhere (``HEADS = {}`` and a decorator), or ``{**base}``
    if depth >= MAX_DEPTH or any(isinstance(e, ast.Starred) for e in entries):
        return UNKNOWN
    results = []
    for entry in entries:  # each entry called (no arguments: they do not choose the kind)
        call = ast.copy_location(ast.Call(func=entry, args=[], keywords=[]), entry)
        results.append(owner.resolve(call, where, depth + 1))
    first = results[0]
    if first.kind is Kind.UNKNOWN or len({(r.kind, r.is_class) for r in results}) != 1:
        return UNKNOWN
    shown = " ".join(ast.unparse(table).split())
    shown = shown if len(shown) <= 30 else shown[:27] + "..."
    where_shown = f"{owner.file.path}:{literal.lineno}"
    return replace(
        first,
        cls=first.cls if len({r.cls for r in results}) == 1 else "",
        name=shown,
        via=f"each of the {len(results)} entries of {shown} at {where_shown} builds "
        f"{'a module' if first.kind is Kind.MODULE else 'the same kind'}"
        + (f" (e.g. {first.via})" if first.via else ""),
    )


def _project_function_result(
    resolver: Context, func: ast.expr, expr: ast.Call, scope: Scope, depth: int
) -> Resolved | None:
    """A module that the project function ``func`` (defined in this project) returns."""
    callee = resolver.resolve(func, scope, depth + 1)
    if callee.function is not None:
        made = resolver.returns_of(callee.function, depth)
    elif callee.factory:
        made = factory_returns(resolver, callee.factory, depth + 1)
    else:
        return None
    return replace(made, name=callee.name) if made.kind is Kind.MODULE else None


def handed_back(
    resolver: Context, callee: Resolved, call: ast.Call, scope: Scope, depth: int
) -> Resolved | None:
    """A project function that returns one of its parameters unchanged (``def freeze(model):
    ...; return model``): the module this call passes it; ``None`` otherwise."""
    if callee.function is not None:
        owner, func = resolver, callee.function
    elif callee.factory and depth < MAX_DEPTH:
        found = foreign_function(resolver, callee.factory)
        if found is None:
            return None
        owner, func = found
    else:
        return None
    returns, yields = returned(func)
    names = {r.id for r in returns if isinstance(r, ast.Name)}
    if (
        yields
        or not returns
        or len(names) != 1
        or len(returns) != sum(isinstance(r, ast.Name) for r in returns)
    ):
        return None
    name = names.pop()
    bindings = owner.bindings_of(func).get(name, [])
    if len(bindings) != 1 or bindings[0].kind not in ("opaque", "annotation"):
        return None  # not a parameter, or rebound in the body
    defined = owner.file.scopes.get(id(func))
    skip = 1 if isinstance(call.func, ast.Attribute) and defined and defined.self_name else 0
    argument = argument_for(func, skip, call, name)
    if argument is None:
        return None
    given = resolver.resolve(argument, scope, depth + 1)
    if given.kind is not Kind.MODULE or given.is_class:
        return None
    where = f"{owner.file.path}:{func.lineno}"
    shown = f" ({given.via})" if given.via else ""
    return replace(given, via=f"{func.name}() at {where} returns its {name}, a module{shown}")


def _inherited_method(
    resolver: Context, func: ast.Attribute, scope: Scope, depth: int
) -> Resolved | None:
    """``obj.method(...)`` where ``method`` comes from a base class in another project
    file: what that method returns, read in its own file."""
    owner = resolver.resolve(func.value, scope, depth + 1)
    if not owner.cls or owner.is_class or depth >= MAX_DEPTH:
        return None
    located = find_method(resolver, owner.cls, func.attr)
    if located is None or located[0] is resolver:
        return None  # this file's methods resolve through the usual path
    where, method = located
    result = where.returns_of(method, depth + 1)
    if result.kind is Kind.UNKNOWN or is_classmethod(method):
        return None
    return replace(result, name=func.attr)


def _named_dynamically(func: ast.expr) -> str:
    """``pkg`` of ``getattr(pkg, name)`` / ``pkg.__dict__[name]`` (a name not written
    out); ``""`` otherwise."""
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and not isinstance(func.args[1], ast.Constant)  # a written name: `getattr_value`
    ):
        return dotted(func.args[0]) or ""
    if (
        isinstance(func, ast.Subscript)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "__dict__"
    ):
        return dotted(func.value.value) or ""
    return ""


def _no_default(call: ast.Call) -> bool:
    """``d.get(key)`` or ``d.get(key, None)``: an entry or nothing."""
    rest = call.args[1:] + [k.value for k in call.keywords]
    return len(call.args) >= 1 and all(
        isinstance(v, ast.Constant) and v.value is None for v in rest
    )


def _dict_entry(resolver: Context, mapping: ast.expr, scope: Scope, depth: int) -> Resolved | None:
    """An entry of a dict display, written in place or bound to a name, when they agree."""
    if isinstance(mapping, ast.Dict):
        found = literal_element(resolver, mapping, scope, depth)
        return None if found.kind is Kind.UNKNOWN else found
    if isinstance(mapping, ast.Name):
        return entry_of(resolver, mapping, scope, depth)
    return None


_CONTEXT_MANAGERS = frozenset({"contextmanager", "asynccontextmanager"})


def entered(resolver: Context, expr: ast.expr, scope: Scope, depth: int) -> Resolved:
    """``name`` of ``with cm(...) as name``: what a project ``@contextmanager`` function
    yields (``with self.hooks(...) as model`` after ``yield self``); unknown otherwise
    (``__enter__`` may return anything)."""
    if not isinstance(expr, ast.Call):
        return UNKNOWN
    func = resolver.resolve(expr.func, scope, depth + 1).function
    if func is None or not any(
        (dotted(d) or "").rsplit(".", 1)[-1] in _CONTEXT_MANAGERS for d in func.decorator_list
    ):
        return UNKNOWN
    yielded = resolver.returns_of(func, depth + 1).elem
    if yielded is None or yielded is Kind.UNKNOWN:
        return UNKNOWN
    where = f"{resolver.file.path}:{func.lineno}"
    return Resolved(yielded, via=f"yielded by the context manager {func.name}() at {where}")
