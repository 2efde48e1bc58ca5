"""Mixins of modules: a class with no base (but ``object`` or ``ABC``) whose every subclass in the project is a module.

``class LocalMixin:`` with ``def convert(self): ... self.forward(x)``, used only as
``class NetLocal(LocalMixin, Net)`` with ``Net`` an ``nn.Module``: inside the mixin's
methods ``self`` is always a module, so ``self.forward(...)`` there skips the module's
hooks (HS102) like it does in the module's own methods. A mixin that one plain class
subclasses too, or that nothing subclasses, stays a plain class.
"""

from __future__ import annotations

from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.python.resolution.classes import ClassKinds
from hookscope.lint.python.resolution.kinds import Kind

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
