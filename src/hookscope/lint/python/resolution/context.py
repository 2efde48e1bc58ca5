"""The one interface every resolution strategy sees: what can this expression be?

A strategy is a function of a `Context` (and the expression, its scope and the depth
of the resolution under way) that answers with a `Resolved` (its ``via`` says why) or
``None`` when it has nothing to say. It asks the context, never another strategy, for
what it needs resolved. The resolver implements this protocol; no strategy imports it.
"""

from __future__ import annotations

import ast
from typing import Protocol

from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.python.parse.bindings import Binding
from hookscope.lint.python.parse.pyfile import CallSite, PyFile, Scope
from hookscope.lint.python.resolution.kinds import Kind, Resolved

Function = ast.FunctionDef | ast.AsyncFunctionDef


class Context(Protocol):
    """One file's resolution: its tree, the project index, and the questions strategies ask.

    Attributes:
        file: the parsed file.
        index: the project-wide class index.
        complete: ``False`` while the tree comes from a masked text (calls may be missing).
        missed: set when a resolution gave up for want of what the masked text dropped.
        class_attrs: bindings of instance attributes by class, filled by `attributes`.
        by_body: class name -> what in its body shows it is a module.
        installed: ``module.Name`` -> what an installed package's source shows the class is.
    """

    file: PyFile
    index: ClassIndex
    complete: bool
    missed: bool
    class_attrs: dict[str, dict[str, list[Binding]]]
    by_body: dict[str, str]
    installed: dict[str, str]

    @property
    def where(self) -> str:
        """This file's path as the index writes locations (from the project root)."""

    def other(self, pyfile: PyFile) -> Context:
        """A context of the same kind for another file of the project."""

    def resolve(self, expr: ast.expr, scope: Scope, depth: int = 0) -> Resolved:
        """What ``expr``, evaluated in ``scope``, can be."""

    def combine(self, bindings: list[Binding], depth: int, label: str = "") -> Resolved:
        """The one kind the values of ``bindings`` agree on, described by ``label``."""

    def bindings_of(self, owner: ast.AST) -> dict[str, list[Binding]]:
        """The names bound in the scope ``owner`` (a function, class or module)."""

    def scope_of(self, owner: ast.AST) -> Scope:
        """The scope of ``owner`` (the module's for a class body)."""

    def calls_named(self, name: str) -> list[tuple[ast.Call, Scope]]:
        """The file's calls of callees named ``name``, with their scopes."""

    def returns_of(self, func: Function, depth: int) -> Resolved:
        """What calling the same-file function ``func`` gives."""

    def annotation(self, node: ast.expr) -> Resolved:
        """The kind of a value annotated with ``node``."""

    def class_kind(self, name: str, module: str = "") -> tuple[Kind, bool]:
        """``(kind, is_container)`` of the class ``name`` (of the module ``module``)."""

    def imported(self, bases: tuple[str, ...]) -> tuple[str, ...]:
        """Bare base names spelled out with the module they are imported from."""

    def class_origin(self, name: str) -> str:
        """The dotted module of the library class ``name`` this file imports, or ``""``."""

    def class_looks_like_module(self, cls: ast.ClassDef) -> bool:
        """Whether a same-file class's body shows it is a module."""

    def passed(self, argument: ast.expr, call: ast.Call, caller: Scope, depth: int) -> Resolved:
        """What ``argument`` of ``call`` (in ``caller``) is: resolved, or a module by the
        caller's own use of it."""

    def element(
        self, iterable: ast.expr, position: int | None, scope: Scope, depth: int
    ) -> Resolved:
        """An element of ``iterable`` (``position``: its index in a tuple target, if any)."""

    def evidence(self, receiver: ast.expr, site: CallSite) -> Resolved | None:
        """What the code around ``site`` says of an unresolved ``receiver``."""

    def used_as_module(self, receiver: ast.expr, scope: Scope) -> Resolved | None:
        """A module, when ``scope`` uses ``receiver`` as only a module is used."""

    def submodule(self, receiver: ast.expr, site: CallSite) -> Resolved | None:
        """A module, when ``receiver`` is an attribute (or element) of a module instance."""


def bound_around(ctx: Context, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
    """The nearest scope from ``scope`` outwards that binds ``name``, with its bindings."""
    current: Scope | None = scope
    while current is not None:
        bindings = ctx.bindings_of(current.node).get(name)
        if bindings:
            return current, bindings
        current = current.parent
    return None
