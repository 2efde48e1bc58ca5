"""What literal displays, copies and ``RRef``s hold, as strategies read them (no strategy):
``[A(), B()][i]``, ``BUILDERS = {"a": build_a, ...}`` (here or imported), ``list(...)`` and
``next(iter(...))``, ``rref.to_here()``, and ``getattr(obj, name)`` over known names.
"""

from __future__ import annotations

import ast
import os
from dataclasses import replace

from hookscope.lint.python.parse.attributes import class_attributes, name_prefix
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, bound_around
from hookscope.lint.python.resolution.crossfile import imported_file
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, UNKNOWN, Kind, Resolved


def literal_element(
    resolver: Context, literal: ast.Dict | ast.List | ast.Tuple | ast.Set, scope: Scope, depth: int
) -> Resolved:
    """An element of ``{k: A, ...}`` or ``[A, B]``: their kind when they all agree."""
    elements = literal.values if isinstance(literal, ast.Dict) else literal.elts
    results = [resolver.resolve(e, scope, depth + 1) for e in elements if e is not None]
    if not results or len({(r.kind, r.is_class) for r in results}) != 1:
        return UNKNOWN
    first = results[0]
    if len({(id(r.function), r.factory) for r in results}) > 1:
        # different functions: calling one is not calling the first (`calls`: what they
        # all build, when they agree)
        return replace(first, cls="", function=None, factory="")
    return one_class(first, results)


def member(resolver: Context, base: Resolved, scope: Scope) -> Resolved:
    """An element of ``base`` (indexed or iterated): the kind of its elements when known;
    a module for a torch container, unless in a hookless class (gpytorch's ``Module``),
    where the elements are most likely of its family."""
    if base.elem is not None:
        return Resolved(base.elem, name=base.name, cls=base.elem_cls)
    if not base.container:
        return Resolved(Kind.UNKNOWN, name=base.name)
    if scope.cls is not None and resolver.class_kind(scope.cls.name)[0] is Kind.HOOKLESS:
        return Resolved(Kind.UNKNOWN, name=base.name)
    return Resolved(Kind.MODULE, name=base.name)


def contents(resolver: Context, call: ast.Call, scope: Scope, depth: int) -> Kind | None:
    """The kind of the modules a container class is built from, when they all agree
    (``ModuleList([Kernel() for ...])``, ``Sequential(A(), B())``); ``None`` if unknown."""
    kinds: set[Kind | None] = set()
    for arg in call.args:
        value = arg.value if isinstance(arg, ast.Starred) else arg
        inner = resolver.resolve(value, scope, depth + 1)
        if (
            value is not arg
            or inner.container
            or (inner.kind is Kind.OTHER and len(call.args) == 1)
        ):
            kinds.add(inner.elem)  # a collection (or *collection) of modules
        else:
            kinds.add(None if inner.is_class else inner.kind)  # one module
    kind = kinds.pop() if len(kinds) == 1 else None
    return kind if kind in (Kind.MODULE, Kind.HOOKLESS) else None


def rref_value(resolver: Context, node: ast.expr, scope: Scope, depth: int) -> Resolved:
    """The value an ``RRef(value, ...)`` holds (``rref.to_here()``), through one name."""
    if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("RRef"):
        return resolver.resolve(node.args[0], scope, depth + 1) if node.args else UNKNOWN
    around = bound_around(resolver, node.id, scope) if isinstance(node, ast.Name) else None
    if around is None or depth > MAX_DEPTH:
        return UNKNOWN
    results = {
        rref_value(resolver, b.expr, resolver.scope_of(b.owner), depth + 1)
        if b.kind == "value" and b.expr is not None
        else UNKNOWN
        for b in around[1]
    }
    return results.pop() if len(results) == 1 else UNKNOWN


def getattr_value(resolver: Context, call: ast.Call, scope: Scope, depth: int) -> Resolved:
    """``getattr(obj, name)`` when every attribute ``name`` can be is known and all resolve
    alike: a string, a loop variable over literal strings, or an f-string prefix of the
    attributes the (same-file) class of ``obj`` assigns."""
    if len(call.args) < 2:
        return UNKNOWN
    obj, name = call.args[0], call.args[1]
    names = attribute_names(resolver, obj, name, scope, depth)
    if not names:
        return UNKNOWN
    attrs = [
        ast.copy_location(ast.Attribute(value=obj, attr=n, ctx=ast.Load()), call) for n in names
    ]
    results = [resolver.resolve(attr, scope, depth + 1) for attr in attrs]
    kinds = {(r.kind, r.is_class) for r in results}
    if len(kinds) != 1 or results[0].kind is Kind.UNKNOWN:
        return UNKNOWN
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    what = ast.unparse(call)
    return replace(results[0], via=f"{what} is one of {shown}, all alike ({results[0].via})")


def attribute_names(
    resolver: Context, obj: ast.expr, name: ast.expr, scope: Scope, depth: int
) -> list[str]:
    """The attributes ``getattr(obj, name)`` can read, when they are known (see
    `getattr_value`); ``[]`` otherwise."""
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return [name.value]
    if isinstance(name, ast.Name):
        bindings = resolver.bindings_of(scope.node).get(name.id, [])
        values: list[str] = []
        for b in bindings:
            literal = b.expr if b.kind == "element" and b.position is None else None
            if not isinstance(literal, (ast.List, ast.Tuple, ast.Set)):
                return []
            strings = [e.value for e in literal.elts if isinstance(e, ast.Constant)]
            if len(strings) != len(literal.elts) or not all(isinstance(s, str) for s in strings):
                return []
            values.extend(str(s) for s in strings)
        return values
    prefix = name_prefix(name)  # ``f"layer_{i}"``, ``"layer_" + key``, ``"layer%d" % i``
    if prefix:
        owner = resolver.resolve(obj, scope, depth + 1)
        cls = resolver.file.classes.get(owner.cls) if owner.cls and not owner.is_class else None
        if cls is None:
            return []
        return sorted(a for a in class_attributes(cls) if a.startswith(prefix))
    return []


DISPLAYS = (ast.Dict, ast.List, ast.Tuple)
# A literal display, the resolver of its file and the scope node it is evaluated in.
Display = tuple[Context, ast.Dict | ast.List | ast.Tuple, ast.AST]


def named_display(resolver: Context, name: ast.Name, scope: Scope) -> Display | None:
    """The one literal display a name is bound to (``BUILDERS = {"a": build_a, ...}``),
    here or in the project file it is imported from, with that file's resolver and the
    scope node it is evaluated in."""
    around = bound_around(resolver, name.id, scope)
    if around is None or len(around[1]) != 1:
        return None
    binding = around[1][0]
    if binding.kind == "value" and isinstance(binding.expr, DISPLAYS):
        return resolver, binding.expr, binding.owner
    if binding.kind != "import":
        return None
    module, _, attr = binding.origin.rpartition(".")
    return module_display(resolver, module, attr)


def module_display(resolver: Context, module: str, name: str) -> Display | None:
    """The literal display bound to the module-level ``name`` of the project module ``module``."""
    other = imported_file(resolver, module)
    found = other.bindings_of(other.file.tree).get(name, []) if other is not None else []
    value = found[0].expr if len(found) == 1 and found[0].kind == "value" else None
    if other is None or not isinstance(value, DISPLAYS):
        return None
    return other, value, other.file.tree


def entry_of(resolver: Context, name: ast.Name, scope: Scope, depth: int) -> Resolved | None:
    """An entry of the literal display ``name`` is bound to (``BUILDERS[key]``), when the
    entries all agree; a function of another file is kept as its factory."""
    display = named_display(resolver, name, scope)
    if display is None:
        return None
    owner, literal, where = display
    found = literal_element(owner, literal, owner.scope_of(where), depth)
    if found.function is not None and owner is not resolver:  # a function of that file
        path = owner.file.path  # foreign files are parsed under their project path
        if os.path.isabs(path) and resolver.index.root:
            path = os.path.relpath(path, resolver.index.root)
        module = path.removesuffix(".py").replace(os.sep, ".")
        found = replace(found, function=None, factory=f"{module}:{found.function.name}")
    return None if found.kind is Kind.UNKNOWN else found


def copied_elements(
    resolver: Context, builtin: str, arg: ast.expr, scope: Scope, depth: int
) -> Resolved | None:
    """``list(x)`` (``tuple``, ``sorted``, ``reversed``, ``iter``) holding the elements of
    ``x``, ``dict(pairs)`` holding their second items, ``next(x)`` one element of ``x``:
    when those elements are known (``model.children()`` gives modules)."""
    if builtin not in _COPIES or bound_around(resolver, builtin, scope):
        return None  # (a name bound around ``scope`` is not the builtin)
    position = 1 if builtin == "dict" else None
    inner = resolver.element(arg, position, scope, depth + 1)
    if inner.kind is Kind.UNKNOWN:
        return None
    if builtin in _PICKS:
        return inner
    return Resolved(Kind.OTHER, name=builtin, elem=inner.kind, elem_cls=inner.cls)


_PICKS = frozenset({"next", "min", "max"})  # one element: ``max(models, key=score)``
_COPIES = frozenset({"list", "tuple", "sorted", "reversed", "iter", "dict"}) | _PICKS


def picks_from(expr: ast.Call) -> bool:
    """Whether ``expr``'s keywords leave it a copy or a pick of its argument's elements:
    none, or only ``key=`` of ``min(xs, key=f)`` / ``max(xs, key=f)``."""
    if not expr.keywords:
        return True
    return (
        isinstance(expr.func, ast.Name)
        and expr.func.id in ("min", "max")
        and all(k.arg == "key" for k in expr.keywords)
    )


def one_class(first: Resolved, results: list[Resolved]) -> Resolved:
    """``first``, without its class unless every result names the same class instance."""
    same = len({r.name for r in results}) == 1 and len({r.cls for r in results}) == 1
    return first if same else replace(first, cls="")  # instances of several classes
