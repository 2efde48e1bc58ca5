"""What an expression is, as far as hooks are concerned: the records resolution returns."""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, replace

from hookscope.lint.python.facts import known

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
        elem_cls: the class of the elements, when they are all instances of one class
            (``[Agent(...) for _ in range(n)]``), for attribute look-ups on them.
        name: the last identifier of the expression, for the heuristic.
        cls: the same-file class of an instance, for attribute look-ups.
        function: the same-file function the expression names, for return values.
        via: how the kind was found, for messages (``m = Linear(...) at f.py:3``).
        factory: ``module:function`` of a project function in another file, whose
            calls resolve through its indexed return annotation or returned calls.
        classes: the project classes an instance may be of, when its bindings give
            instances of several (``a = A()`` in one branch, ``a = B()`` in another;
            ``cls`` is then empty), for the calls that may run one of their methods.
        foreign: an object of a library that gives no torch module (`libraries.
            not_module_package`: a Lua-torch net, an OpenCV net): its attributes and the
            results of its methods are that library's objects too.
    """

    kind: Kind
    is_class: bool = False
    container: bool = False
    elem: Kind | None = None
    elem_cls: str = ""
    name: str = ""
    cls: str = ""
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    via: str = ""
    factory: str = ""
    classes: tuple[str, ...] = ()
    foreign: bool = False


UNKNOWN = Resolved(Kind.UNKNOWN)
# A strategy's answer that settles the question unresolved: the registry asks no further.
SETTLED = Resolved(Kind.UNKNOWN, via="settled: unresolved")
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
    whose elements are known (an empty list says nothing of them); ``-1`` when they hold
    elements of several kinds."""
    elems = {r.elem for r in results if r.elem is not None}
    if len(elems) > 1:
        return -1
    return next((i for i, r in enumerate(results) if r.elem is not None), 0)


def agreed(
    results: list[tuple[ast.Call, str, Resolved]], what: str, name: str | None = None
) -> Resolved | None:
    """The one kind every call passes (``(call, its file, what it passes)``), described by
    the first call and renamed to ``name`` if given; ``None`` if none or they differ."""
    if not results or len({(r.kind, r.container, r.elem) for _, _, r in results}) != 1:
        return None
    call, path, first = results[0]
    shown = " ".join(ast.unparse(call).split())
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    kind = "a module" if first.kind is Kind.MODULE else f"the same kind ({first.kind.value})"
    cls = first.cls if len({r.cls for _, _, r in results}) == 1 else ""
    via = f"{what} passes {kind}: {shown} at {path}:{call.lineno}"
    return replace(first, name=first.name if name is None else name, cls=cls, via=via)
