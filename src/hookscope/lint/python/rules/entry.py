"""Which methods of a class run inside its call machinery (HS102's entry methods).

``self.forward(...)`` inside ``forward``, ``__call__`` and what those call on ``self``
skips nothing: the module was entered through ``Module.__call__``. Elsewhere it skips the
module's hooks. Exception: a module class whose own ``__call__`` never runs
``Module.__call__`` (no ``super().__call__``, ``nn.Module.__call__(self, ...)`` or
``_call_impl``) replaces the hook machinery, and its ``self.forward(...)`` skips them all.

Mixins of modules (`module_mixin`): in a class with no base but ``object``/``ABC`` whose
every project subclass is a module (``class NetLocal(LocalMixin, Net)``), ``self`` is
always a module, so ``self.forward(...)`` there skips hooks too.
"""

from __future__ import annotations

import ast

from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.python.facts import libraries
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.resolution.classes import ClassKinds
from hookscope.lint.python.resolution.kinds import Kind
from hookscope.lint.python.rules.analysis import Analysis
from hookscope.lint.python.rules.outside_entries import entered_from_outside

Method = ast.FunctionDef | ast.AsyncFunctionDef

# What runs ``Module.__call__`` (and so the hooks) from an own ``__call__``.
_CALL_MACHINERY = frozenset({"__call__", "_call_impl", "_wrapped_call_impl"})


def entry_methods(analysis: Analysis, cls: ast.ClassDef, *, own_call: bool = True) -> set[str]:
    """``forward``, ``__call__``, methods aliased to ``__call__`` and what they call on self.

    An own ``__call__`` that also calls ``super().__call__(...)`` is not that machinery
    (what it calls on its other paths skips the hooks); without ``own_call``, neither is
    one that never runs ``Module.__call__`` (`replaced_call`), nor what only it reaches.
    """
    key = f"entry:{id(cls)}:{own_call}"
    cached = analysis.cache.get(key)
    if isinstance(cached, set):
        return cached
    methods = {n.name: n for n in cls.body if isinstance(n, Method)}
    entry = {"forward", "__call__"}
    if libraries.keras_file(analysis.file.tree, analysis.file.imports_torch):
        entry.add("call")  # Keras's ``Layer.__call__`` runs ``call``: the entry point there
    for stmt in cls.body:
        target = (
            stmt.targets[0]
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            else getattr(stmt, "target", None)
        )
        value = getattr(stmt, "value", None)
        if isinstance(target, ast.Name) and target.id == "__call__" and isinstance(value, ast.Name):
            entry.add(value.id)
    todo = [m for m in entry if m in methods]
    if "__call__" in methods and _runs_module_call(methods["__call__"], super_only=True):
        todo.remove("__call__")
    elif not own_call and replaced_call(cls):
        entry.discard("__call__")
        todo.remove("__call__")
    roots = set(entry)
    entry |= _reached(methods, todo, entry)
    # a helper that other code also runs directly (``policy.sample_actions(...)``) is an
    # entry point of its own: it and what it reaches skip the hooks when entered that way
    helpers = [m for m in entry - roots if m in methods]
    if not any(_calls_own_forward(methods[m]) for m in helpers):
        helpers = []  # (nothing there would be reported: not looked up)
    outside = [m for m in helpers if entered_from_outside(analysis, cls, m)]
    if outside:
        entry -= {*outside, *_reached(methods, outside, roots)}
    analysis.cache[key] = entry
    return entry


def _reached(methods: dict[str, Method], todo: list[str], known: set[str]) -> set[str]:
    """The methods that ``todo``'s methods reach through ``self`` (the class's own,
    ``self.x(...)`` or ``self.x`` handed on), transitively, less those in ``known``."""
    todo, seen = list(todo), set(known) | set(todo)
    found: set[str] = set()
    while todo:
        method = methods[todo.pop()]
        own = self_names_of(method)
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in methods
                and node.attr not in seen
                and _on_self(node.value, own)
            ):
                seen.add(node.attr)
                found.add(node.attr)
                todo.append(node.attr)
    return found


def _calls_own_forward(method: Method) -> bool:
    """Whether ``method`` holds a ``self.forward`` (its first parameter's)."""
    own = self_names_of(method)
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "forward"
        and isinstance(node.value, ast.Name)
        and node.value.id in own
        for node in ast.walk(method)
    )


def replaced_call(cls: ast.ClassDef) -> bool:
    """Whether ``cls`` defines ``def __call__`` that never runs ``Module.__call__``: no
    ``super().__call__(...)``, ``Base.__call__(self, ...)`` or ``_call_impl`` in it."""
    method = next((n for n in cls.body if isinstance(n, Method) and n.name == "__call__"), None)
    return method is not None and not _runs_module_call(method, super_only=False)


def _runs_module_call(method: Method, *, super_only: bool) -> bool:
    """``super().__call__(...)`` in ``method``; unless ``super_only``, also any other
    ``X.__call__(...)``/``X._call_impl(...)``, which may be ``nn.Module``'s."""
    for node in ast.walk(method):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == "__call__" and is_super_call(node.func.value):
            return True
        if not super_only and node.func.attr in _CALL_MACHINERY:
            return True
    return False


def is_super_call(node: ast.expr) -> bool:
    """``super()`` or ``super(...)``."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def self_names_of(method: Method) -> frozenset[str]:
    """The name a method's instance goes by: its first parameter."""
    args = [*method.args.posonlyargs, *method.args.args]
    return frozenset({args[0].arg}) if args else frozenset()


def _on_self(node: ast.expr, own: frozenset[str]) -> bool:
    """``self``, ``self.__class__``, ``type(self)`` or the class itself by name: what a
    method of this class is reached through (``self.ema.model.extract_features`` is another
    object's method of the same name)."""
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        node = node.value
    elif isinstance(node, ast.Call) and dotted(node.func) == "type" and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Name) and (node.id in own or node.id[:1].isupper())


# The subclasses of every class name, for one index at a time: (index id, name -> subclasses).
_SUBCLASSES: list[tuple[int, dict[str, list[str]]]] = [(0, {})]


def module_mixin(
    kinds: ClassKinds, name: str, seen: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """The subclasses of the project class ``name`` (defined once, with no base but
    ``object`` or ``ABC``) when every one of them is a module, or a mixin of that kind
    itself (``class ExportableModel(Exportable)``, used only by modules); ``()`` when
    ``name`` is no such mixin."""
    defs = kinds.index.defs.get(name, ())
    if len(defs) != 1 or name in seen:
        return ()
    if any(base not in _NO_BASE and base.rsplit(".", 1)[-1] not in seen for base in defs[0][0]):
        return ()  # a base that is neither plain nor the mixin this one extends
    subclasses = _subclasses(kinds.index).get(name, [])
    if not subclasses:
        return ()
    for sub in subclasses:
        kind = kinds.class_kind(sub)[0]
        if kind is not Kind.MODULE and not (
            kind is Kind.OTHER and module_mixin(kinds, sub, seen | {name})
        ):
            return ()
    return tuple(subclasses)


# What a mixin's bases may be: nothing, or what makes it a plain or abstract class.
_NO_BASE = frozenset({"object", "ABC", "abc.ABC"})


def _subclasses(index: ClassIndex) -> dict[str, list[str]]:
    if _SUBCLASSES[0][0] != id(index):
        found: dict[str, list[str]] = {}
        for sub, variants in index.defs.items():
            for bases, _ in variants:
                for base in bases:
                    found.setdefault(base.rsplit(".", 1)[-1], []).append(sub)
        _SUBCLASSES[0] = (id(index), {k: sorted(set(v)) for k, v in found.items()})
    return _SUBCLASSES[0][1]
