"""What an expression is, as far as hooks are concerned: the records resolution returns."""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass

from hookscope.lint import known

# How many steps (names, attributes, calls, returns) one resolution may take: enough for
# a factory that returns a class method's result through ``super()``, and a bound on cycles.
MAX_DEPTH = 12


class Kind(enum.Enum):
    """What an expression is, as far as hooks are concerned."""

    MODULE = "module"
    HOOKLESS = "hookless module"
    OTHER = "not a module"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Resolved:
    """The result of resolving an expression.

    Attributes:
        kind: module, not a module, or unknown.
        is_class: the expression is a class object, not an instance.
        container: a ``Sequential``/``ModuleList``/``ModuleDict`` (or subclass) instance.
        elem: the kind of the elements when iterated or indexed.
        name: the last identifier of the expression, for the heuristic.
        cls: the same-file class of an instance, for attribute look-ups.
        function: the same-file function the expression names, for return values.
        via: how the kind was found, for messages (``m = Linear(...) at f.py:3``).
        factory: ``module:function`` of a project function in another file, whose
            calls resolve through its indexed return annotation or returned calls.
    """

    kind: Kind
    is_class: bool = False
    container: bool = False
    elem: Kind | None = None
    name: str = ""
    cls: str = ""
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    via: str = ""
    factory: str = ""


UNKNOWN = Resolved(Kind.UNKNOWN)
NAMESPACE = Resolved(Kind.OTHER, name="<namespace>")


def looks_like_module(name: str, mentions_torch: bool) -> bool:
    """The heuristic for receivers whose type cannot be resolved (see module docstring)."""
    if name and known.NOT_MODULE_NAME.search(name):
        return False
    if name and known.MODULE_NAME.search(name):
        return True
    return mentions_torch


def with_elements(results: list[Resolved]) -> int:
    """Which of several results of one kind to report (its index): for collections, one
    whose elements are known (``model = []`` then ``model = [Wrap(m) for m in model]``:
    an empty list says nothing of its elements); ``-1`` when they hold elements of
    several kinds (then none is known)."""
    elems = {r.elem for r in results if r.elem is not None}
    if len(elems) > 1:
        return -1
    return next((i for i, r in enumerate(results) if r.elem is not None), 0)
