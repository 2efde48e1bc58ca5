"""What containers hold: elements of iterables and literals, the value of an ``RRef``,
the attribute ``getattr(obj, name)`` gives when every ``name`` it can take is known.

``for m in self.layers`` (a ``ModuleList``), ``for name, m in x.named_children()``,
``for i, m in enumerate(...)``, ``for a, b in zip(xs, ys)``, ``d.values()`` /
``d.items()``, ``[A(), B()][i]``, and ``rref.to_here()`` for ``rref = RRef(value)``.
"""

from __future__ import annotations

import ast
import os
from dataclasses import replace

from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.attributes import class_attributes, name_prefix
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import imported_file
from hookscope.lint.python.resolution.kinds import MAX_DEPTH, UNKNOWN, Kind, Resolved
from hookscope.lint.python.resolution.values.appends import rows_of_modules

# The displays and comprehensions `collection` resolves.
COLLECTIONS = (
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.GeneratorExp,
    ast.DictComp,
)


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
    return _one_class(first, results)


def collection(resolver: Context, expr: ast.expr, scope: Scope, depth: int) -> Resolved:
    """A list, tuple, set or dict display or comprehension: not a module, with the kind of
    its elements (values) when they all agree (``[Block() for _ in range(3)]``)."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        inner = literal_element(resolver, expr, scope, depth)
    elif isinstance(expr, ast.DictComp):
        inner = resolver.resolve(expr.value, scope, depth + 1)
    elif isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        inner = resolver.resolve(expr.elt, scope, depth + 1)
    else:
        return UNKNOWN
    known_kind = inner.kind is not Kind.UNKNOWN and not inner.is_class
    if not known_kind:
        return Resolved(Kind.OTHER)
    return Resolved(Kind.OTHER, elem=inner.kind, elem_cls=inner.cls)


def element(
    resolver: Context, iterable: ast.expr, position: int | None, scope: Scope, depth: int
) -> Resolved:
    """An element of ``iterable`` (``position``: the index in a tuple target, if any)."""
    if isinstance(iterable, ast.Call):
        func = iterable.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if attr in known.MODULE_ITERATORS and position is None:
            return Resolved(Kind.MODULE)
        if attr in known.NAMED_MODULE_ITERATORS and position == 1:
            return Resolved(Kind.MODULE)
        if (
            isinstance(func, ast.Name)
            and attr in _SAME_ELEMENTS
            and len(iterable.args) == 1
            and not iterable.keywords
        ):  # ``for m in list(model.children())``: the elements of what is copied
            return element(resolver, iterable.args[0], position, scope, depth)
        if attr == "enumerate" and iterable.args and position == 1:
            return element(resolver, iterable.args[0], None, scope, depth)
        if attr == "zip" and position is not None and position < len(iterable.args):
            return element(resolver, iterable.args[position], None, scope, depth)
        if attr == "values" and isinstance(func, ast.Attribute):
            return element(resolver, func.value, position, scope, depth)
        if attr == "items" and isinstance(func, ast.Attribute) and position == 1:
            return element(resolver, func.value, None, scope, depth)
    if position is None and _registered_child(iterable):
        return Resolved(Kind.MODULE, via="an element of a child in a module's `_modules`")
    if position is not None:  # ``for cls, fn in [(A, f), (B, g)]``: a column of the rows
        column = _column(resolver, iterable, position, scope, depth)
        if column is not None:
            return column
    if isinstance(iterable, (ast.List, ast.Tuple)):
        return literal_element(resolver, iterable, scope, depth) if position is None else UNKNOWN
    inner = resolver.resolve(iterable, scope, depth + 1)
    if position is not None:
        if inner.container and rows_of_modules(resolver, iterable, scope, depth):
            return Resolved(Kind.MODULE, via=f"a module of a row of {inner.via or 'a container'}")
        return UNKNOWN
    return member(resolver, inner, scope)


# Builtins whose result holds the elements of their one argument, in some order.
_SAME_ELEMENTS = frozenset({"list", "tuple", "sorted", "reversed", "iter"})


def _registered_child(iterable: ast.expr) -> bool:
    """``model._modules["features"]``: a child module registered on a module; one that is
    iterated is a container (``Sequential``, ``ModuleList``), whose elements are modules."""
    return (
        isinstance(iterable, ast.Subscript)
        and not isinstance(iterable.slice, ast.Slice)
        and isinstance(iterable.value, ast.Attribute)
        and iterable.value.attr == "_modules"
    )


def _column(
    resolver: Context, iterable: ast.expr, position: int, scope: Scope, depth: int
) -> Resolved | None:
    """Item ``position`` of every row of a list or tuple display of tuples (written in
    place or bound to a name), when those items all agree."""
    if isinstance(iterable, (ast.List, ast.Tuple)):
        owner, literal, where = resolver, iterable, scope
    elif isinstance(iterable, ast.Name):
        display = named_display(resolver, iterable, scope)
        if display is None or isinstance(display[1], ast.Dict):
            return None
        owner, literal, where = display[0], display[1], display[0].scope_of(display[2])
    else:
        return None
    rows = [e for e in literal.elts if isinstance(e, (ast.Tuple, ast.List))]
    if not rows or len(rows) != len(literal.elts) or any(len(r.elts) <= position for r in rows):
        return None
    results = [owner.resolve(row.elts[position], where, depth + 1) for row in rows]
    if len({(r.kind, r.is_class) for r in results}) != 1 or results[0].kind is Kind.UNKNOWN:
        return None
    first = results[0]
    return _one_class(first, results)


def member(resolver: Context, base: Resolved, scope: Scope) -> Resolved:
    """An element of ``base`` (indexed or iterated): the kind of its elements when known.

    The elements of a ``ModuleList``/``Sequential``/``ModuleDict`` whose contents are not
    known are modules, but in a class whose own ``__call__`` runs no torch hooks
    (gpytorch's ``Module``) they are most likely of its family, so they stay unknown.
    """
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
    current: Scope | None = scope
    while isinstance(node, ast.Name) and current is not None and depth <= MAX_DEPTH:
        bindings = resolver.bindings_of(current.node).get(node.id)
        if bindings:
            results = {
                rref_value(resolver, b.expr, resolver.scope_of(b.owner), depth + 1)
                if b.kind == "value" and b.expr is not None
                else UNKNOWN
                for b in bindings
            }
            return results.pop() if len(results) == 1 else UNKNOWN
        current = current.parent
    return UNKNOWN


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
    results = [
        resolver.resolve(
            ast.copy_location(ast.Attribute(value=obj, attr=n, ctx=ast.Load()), call),
            scope,
            depth + 1,
        )
        for n in names
    ]
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


_DISPLAYS = (ast.Dict, ast.List, ast.Tuple)


def named_display(
    resolver: Context, name: ast.Name, scope: Scope
) -> tuple[Context, ast.Dict | ast.List | ast.Tuple, ast.AST] | None:
    """The one literal display a name is bound to (``BUILDERS = {"a": build_a, ...}``),
    here or in the project file it is imported from, with that file's resolver and the
    scope node it is evaluated in."""
    current: Scope | None = scope
    while current is not None:
        bindings = resolver.bindings_of(current.node).get(name.id)
        if bindings:
            break
        current = current.parent
    else:
        return None
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if binding.kind == "value" and isinstance(binding.expr, _DISPLAYS):
        return resolver, binding.expr, binding.owner
    if binding.kind != "import":
        return None
    module, _, attr = binding.origin.rpartition(".")
    other = imported_file(resolver, module)
    if other is None:
        return None
    found = other.bindings_of(other.file.tree).get(attr, [])
    if len(found) == 1 and found[0].kind == "value" and isinstance(found[0].expr, _DISPLAYS):
        return other, found[0].expr, other.file.tree
    return None


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


def alternatives(expr: ast.IfExp | ast.BoolOp) -> list[ast.expr]:
    """The values ``a if c else b`` / ``a or b`` may take (``None`` left out; an ``and``
    chain gives none: its value may be a falsy operand)."""
    if isinstance(expr, ast.IfExp):
        values = [expr.body, expr.orelse]
    elif isinstance(expr.op, ast.Or):
        values = list(expr.values)
    else:
        return []
    return [v for v in values if not (isinstance(v, ast.Constant) and v.value is None)]


def branches(resolver: Context, expr: ast.IfExp | ast.BoolOp, scope: Scope, depth: int) -> Resolved:
    """``A() if c else B()``, ``net or Net()``: the kind every branch agrees on (`either`)."""
    return either([resolver.resolve(v, scope, depth + 1) for v in alternatives(expr)])


def either(results: list[Resolved]) -> Resolved:
    """One of several values: their kind when the known ones agree."""
    known_results = [r for r in results if r.kind is not Kind.UNKNOWN]
    if len({(r.kind, r.is_class) for r in known_results}) != 1:
        return UNKNOWN
    first = known_results[0]
    return first if len({r.cls for r in known_results}) == 1 else replace(first, cls="")


def _one_class(first: Resolved, results: list[Resolved]) -> Resolved:
    """``first``, without its class unless every result names the same class instance."""
    same = len({r.name for r in results}) == 1 and len({r.cls for r in results}) == 1
    return first if same else replace(first, cls="")  # instances of several classes
