"""Decide whether an expression is a torch module, without running anything: names and
``self`` attributes are followed to their bindings, classes to their bases, and all else
is asked of `strategies`. An unknown type is guessed from the receiver's last identifier
(`kinds.looks_like_module`: ``self.encoder`` → ``encoder``), a documented guess.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.attributes import on_instance
from hookscope.lint.python.parse.bindings import (
    Binding,
    dotted,
    global_bindings,
    only_raises,
    returned,
    scope_bindings,
)
from hookscope.lint.python.parse.calls import calls_by_name
from hookscope.lint.python.parse.pyfile import CallSite, PyFile, Scope
from hookscope.lint.python.parse.reach import (
    declared_global,
    in_own_value,
    outside_own_values,
    past_self_rebinds,
    reaching,
    settled,
)
from hookscope.lint.python.resolution import strategies
from hookscope.lint.python.resolution.attributes import class_attr, in_subclasses, is_none_binding
from hookscope.lint.python.resolution.bodies import returned_module
from hookscope.lint.python.resolution.classes import ClassKinds, base_names
from hookscope.lint.python.resolution.crossfile import import_origin, imported_name, module_function
from hookscope.lint.python.resolution.kinds import (
    MAX_DEPTH,
    NAMESPACE,
    UNKNOWN,
    Kind,
    Resolved,
    with_elements,
)
from hookscope.lint.python.resolution.methods import (
    is_classmethod,
    is_property,
    is_staticmethod,
    method_value,
)
from hookscope.lint.python.resolution.typehints import annotation_kind


class Resolver(ClassKinds):
    """Resolves expressions of one file against the project-wide class index."""

    def __init__(self, pyfile: PyFile, index: ClassIndex) -> None:
        super().__init__(pyfile, index)
        self._scope_bindings: dict[int, dict[str, list[Binding]]] = {}
        self.class_attrs: dict[str, dict[str, list[Binding]]] = {}  # by `attributes`
        self._calls: dict[str, list[tuple[ast.Call, Scope]]] | None = None
        self._globals: dict[int, frozenset[str]] = {}
        # False while the tree comes from a masked text (`regions`): calls may be missing.
        self.complete = True
        # A resolution gave up for want of what the masked text dropped: parse it all.
        self.missed = False

    def other(self, pyfile: PyFile) -> Resolver:
        """A resolver of another project file, against the same index."""
        return type(self)(pyfile, self.index)

    # -- expressions -------------------------------------------------------
    def resolve(self, expr: ast.expr, scope: Scope, depth: int = 0) -> Resolved:
        """Resolve ``expr`` evaluated in ``scope``."""
        if depth > MAX_DEPTH:
            return UNKNOWN
        if isinstance(expr, ast.Name):
            return self._narrow(self._name(expr.id, scope, depth, expr.lineno), expr, scope)
        if isinstance(expr, ast.Attribute):
            return self._narrow(self._attribute(expr, scope, depth), expr, scope)
        strategy = strategies.EXPRESSIONS.get(type(expr))
        if strategy is not None:
            return strategy(self, expr, scope, depth)
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Compare)):
            return Resolved(Kind.OTHER)
        return UNKNOWN

    def _narrow(self, result: Resolved, expr: ast.expr, scope: Scope) -> Resolved:
        """An unresolved ``expr`` narrowed by an ``isinstance`` guard around it."""
        if result.kind is not Kind.UNKNOWN or result.is_class:
            return result
        found = strategies.first(strategies.NARROWING, self, expr, scope)
        if found is None:
            return result
        return replace(result, kind=found.kind, via=found.via, is_class=found.is_class)

    def _name(self, name: str, scope: Scope, depth: int, line: int = 0) -> Resolved:
        if name == scope.self_name and scope.cls is not None:
            kind, container = self.class_kind(scope.cls.name)
            if is_classmethod(scope.method):  # ``cls``: the class itself
                return Resolved(kind, is_class=True, container=container, name=scope.cls.name)
            return Resolved(kind, container=container, name=name, cls=scope.cls.name)
        current: Scope | None = scope
        while current is not None:
            if current.parent is not None and name in self._globals_of(current.node):
                current = current.parent  # ``global m``: the module's ``m`` (holds ours too)
                continue
            if not isinstance(current.node, ast.ClassDef):
                bindings = self.bindings_of(current.node).get(name)
                found = strategies.first(strategies.NAMES, self, current, bindings, name, depth)
                if found is not None:
                    return found
                if bindings:
                    if current is scope and line:
                        bindings = [b for b in bindings if not in_own_value(b, line)]
                        bindings = reaching(current.node, bindings, line)
                        # ``net = net.cuda()``: the ``net`` on the right is the parameter
                        found = strategies.parameter(self, current, bindings, name, depth)
                        if found is not None:
                            return found
                    elif current is not scope:  # ``global m`` ... ``m = m.to(d)`` in a function
                        bindings = past_self_rebinds(bindings, name)
                    result = self.combine(bindings, depth, name)
                    return result if result is NAMESPACE else replace(result, name=name)
            current = current.parent
        if name in self.file.classes or name in self.index or name in known.TORCH_NN_MODULES:
            kind, container = self.class_kind(name)
            return Resolved(kind, is_class=True, container=container, name=name)
        return Resolved(Kind.UNKNOWN, is_class=name[:1].isupper(), name=name)

    def _globals_of(self, node: ast.AST | None) -> frozenset[str]:
        """The names the function ``node`` declares ``global`` (none in most files)."""
        if node is None or not self.file.declares_global:
            return frozenset()
        if id(node) not in self._globals:
            self._globals[id(node)] = declared_global(node)
        return self._globals[id(node)]

    def calls_named(self, name: str) -> list[tuple[ast.Call, Scope]]:
        """The file's calls of callees named ``name`` (none when the name is also used
        other than as a callee), with their scopes."""
        if self._calls is None:
            self._calls = calls_by_name(self.file)
        return self._calls.get(name, [])

    def _attribute(self, expr: ast.Attribute, scope: Scope, depth: int) -> Resolved:
        expr = on_instance(expr) or expr  # ``self.__class__.x`` is ``self.x``
        path = dotted(expr) or ""
        if path.startswith(("torch.classes.", "torch.ops.")):
            return Resolved(Kind.OTHER, name=expr.attr)
        if (found := strategies.first(strategies.ATTRIBUTES, self, expr, scope, depth)) is not None:
            return found
        base = self.resolve(expr.value, scope, depth + 1)
        if base.foreign and not base.is_class:  # ``load_lua(p).model``: that library's too
            return replace(base, name=expr.attr, via=f"{base.via}, nor its attributes")
        if base.cls and not base.is_class:
            owner, bindings = class_attr(self, base.cls, expr.attr)
            bindings = settled(bindings, scope.method)
            bindings = outside_own_values(bindings, scope.method, expr.lineno)
            if bindings and all(is_none_binding(b) for b in bindings):
                held = in_subclasses(self, base.cls, expr.attr, depth + 1, placeholder=True)
                if held is not None:  # ``self.clas = None``, built by every subclass
                    return replace(held, name=expr.attr)
            if bindings:
                label = f"{base.name}.{expr.attr}" if base.name else expr.attr
                return replace(owner.combine(bindings, depth + 1, label), name=expr.attr)
            method = self._method(base.cls, expr.attr)
            if method is not None and is_property(method):
                return replace(self.returns_of(method, depth + 1), name=expr.attr)
            if method is not None:
                return Resolved(Kind.OTHER, name=expr.attr, function=method)
            if (got := method_value(self, base.cls, expr.attr, depth)) is not None:
                return replace(got, name=expr.attr)  # a base's property in another file
            held = in_subclasses(self, base.cls, expr.attr, depth + 1)
            if held is not None:  # bound only by the subclasses of ``base.cls``
                return replace(held, name=expr.attr)
        if base.is_class and base.name in self.file.classes:
            method = self._method(base.name, expr.attr)
            if method is not None and (is_staticmethod(method) or is_classmethod(method)):
                return Resolved(Kind.OTHER, name=expr.attr, function=method)
        if expr.attr[:1].isupper() and (
            base.is_class or base is NAMESPACE or base.kind is Kind.UNKNOWN
        ):
            prefix = dotted(expr.value)
            # ``torchaudio.transforms.Resample``: the class of that imported package.
            module = import_origin(self, prefix, scope) if prefix else ""
            kind, container = self.class_kind(expr.attr, module)
            return Resolved(kind, is_class=True, container=container, name=expr.attr)
        if base is NAMESPACE or (base.kind is Kind.UNKNOWN and not base.is_class):
            return module_function(self, expr, scope)  # ``from pkg import models``
        return Resolved(Kind.UNKNOWN, name=expr.attr)

    def returns_of(self, func: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> Resolved:
        """What calling a same-file function gives: its return annotation if it says, else
        its returns, or a generator of its yields."""
        if func.returns is not None:
            declared = self.annotation(func.returns)
            if declared.kind is not Kind.UNKNOWN and not declared.is_class:
                where = f"{self.file.path}:{func.lineno}"
                shown = " ".join(ast.unparse(func.returns).split())
                return replace(declared, via=f"{func.name}() -> {shown} at {where}")
        returns, yields = returned(func)
        scope = self.file.scopes.get(id(func))
        if scope is None or (not returns and not yields and only_raises(func)):
            return UNKNOWN  # ``raise NotImplementedError``: what overrides return is unknown
        as_bindings = [Binding("value", e, func) for e in (returns or yields)]
        result = self.combine(as_bindings, depth + 1) if as_bindings else Resolved(Kind.OTHER)
        if returns and result.kind is Kind.UNKNOWN:  # ``model.eval(); return model``
            used = returned_module(func, returns, self.index.lookalike_methods)
            result = Resolved(Kind.MODULE, via=f"a module by its use: {used}") if used else result
        if returns or not yields:
            return result
        return Resolved(Kind.OTHER, elem=Kind.MODULE if result.kind is Kind.MODULE else result.kind)

    def _method(
        self, cls_name: str, name: str, seen: frozenset[str] = frozenset()
    ) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        cls = self.file.classes.get(cls_name)
        if cls is None or cls_name in seen:
            return None
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return stmt
        for base in base_names(cls):
            found = self._method(base.rsplit(".", 1)[-1], name, seen | {cls_name})
            if found is not None:
                return found
        return None

    # -- bindings ----------------------------------------------------------
    def bindings_of(self, owner: ast.AST) -> dict[str, list[Binding]]:
        key = id(owner)
        if key not in self._scope_bindings:
            made = scope_bindings(owner)
            if owner is self.file.tree and self.file.declares_global:
                for name, more in global_bindings(self.file.tree).items():
                    made[name] = [*made.get(name, []), *more]
            self._scope_bindings[key] = made
        return self._scope_bindings[key]

    def combine(self, bindings: list[Binding], depth: int, label: str = "") -> Resolved:
        pairs = [(b, r) for b, r in ((b, self._binding(b, depth)) for b in bindings) if r]
        if not pairs:
            return UNKNOWN
        known_pairs = [(b, r) for b, r in pairs if r.kind is not Kind.UNKNOWN]
        kinds = {r.kind for _, r in known_pairs}
        if len(kinds) == 1:
            chosen = with_elements([r for _, r in known_pairs])
            binding, result = known_pairs[max(chosen, 0)]
            result = result if chosen >= 0 else replace(result, elem=None, elem_cls="")
            if len({r.elem_cls for _, r in known_pairs if r.elem is not None}) > 1:
                result = replace(result, elem_cls="")  # instances of several classes
            if result.cls and len(classes := {r.cls for _, r in known_pairs}) > 1:
                # ``a = Agent()`` here, ``a = Other()`` there: one of them, when all are known
                every = len(known_pairs) == len(pairs) and "" not in classes
                result = replace(result, cls="", classes=tuple(sorted(classes)) if every else ())
            if result.via or not label or result is NAMESPACE:
                return result
            return replace(result, via=self._describe(binding, label))
        return pairs[0][1] if not kinds else UNKNOWN

    def _describe(self, binding: Binding, label: str) -> str:
        """``label = <value> at path:line``: the binding a resolution rests on."""
        node = binding.expr or binding.owner
        text = " ".join(ast.unparse(node).split()) if binding.expr is not None else ""
        text = text if len(text) <= 40 else text[:37] + "..."
        shown = {
            "value": f"{label} = {text}",
            "annotation": f"{label}: {text}",
            "element": f"for {label} in {text}",
            "import": f"import {binding.origin}",
        }.get(binding.kind, f"{label} ({binding.kind} {binding.origin})".strip())
        where = binding.where or f"{self.file.path}:{getattr(node, 'lineno', 1)}"
        return f"{shown} at {where}"

    def _binding(self, binding: Binding, depth: int) -> Resolved | None:
        scope = self.scope_of(binding.owner)
        if binding.kind == "namespace":
            return NAMESPACE
        if binding.kind == "function" and isinstance(
            binding.owner, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            return Resolved(Kind.OTHER, name=binding.origin, function=binding.owner)
        if binding.kind == "class":
            kind, container = self.class_kind(binding.origin)
            return Resolved(kind, is_class=True, container=container, name=binding.origin)
        if binding.kind == "import":
            return imported_name(self, binding.origin, depth)
        if binding.expr is None:
            return UNKNOWN if binding.kind == "opaque" else None
        if isinstance(binding.expr, ast.Constant) and binding.expr.value is None:
            return None
        if binding.kind == "annotation":
            return self.annotation(binding.expr)
        return strategies.BINDINGS.get(binding.kind, strategies.VALUE)(self, binding, scope, depth)

    def scope_of(self, owner: ast.AST) -> Scope:
        scope = self.file.scopes.get(id(owner))
        if scope is None:  # a class body: evaluate in the module scope
            scope = self.file.scopes[id(self.file.tree)]
        return scope

    def annotation(self, node: ast.expr) -> Resolved:
        """The kind of a value annotated with ``node``."""
        return annotation_kind(self, node)

    # -- what the code around says ------------------------------------------
    def passed(self, argument: ast.expr, call: ast.Call, caller: Scope, depth: int) -> Resolved:
        """What ``argument`` of ``call`` is (`passing.passed`)."""
        return strategies.passed(self, argument, call, caller, depth)

    def element(
        self, iterable: ast.expr, position: int | None, scope: Scope, depth: int
    ) -> Resolved:
        """An element of ``iterable`` (`containers.element`)."""
        return strategies.element(self, iterable, position, scope, depth)

    def evidence(self, receiver: ast.expr, site: CallSite) -> Resolved | None:
        """What the code around ``site`` says of ``receiver`` (`strategies.EVIDENCE`)."""
        return strategies.evidence(self, receiver, site)

    def used_as_module(self, receiver: ast.expr, scope: Scope) -> Resolved | None:
        """A module by its use in ``scope`` (`evidence.used_as_module`)."""
        return strategies.used_as_module(self, receiver, scope)

    def submodule(self, receiver: ast.expr, site: CallSite) -> Resolved | None:
        """A module as an attribute of a module (`evidence.submodule`)."""
        return strategies.submodule(self, receiver, site)
