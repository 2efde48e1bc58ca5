"""Mixins of modules: a class with no base whose every subclass in the project is a module.

``class LocalMixin:`` with ``def convert(self): ... self.forward(x)``, used only as
``class NetLocal(LocalMixin, Net)`` with ``Net`` an ``nn.Module``: inside the mixin's
methods ``self`` is always a module, so ``self.forward(...)`` there skips the module's
hooks (HS102) like it does in the module's own methods. A mixin that one plain class
subclasses too, or that nothing subclasses, stays a plain class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookscope.lint.kinds import Kind

if TYPE_CHECKING:
    from hookscope.lint.classes import ClassKinds
    from hookscope.lint.index import ClassIndex

# The subclasses of every class name, for one index at a time: (index id, name -> subclasses).
_SUBCLASSES: list[tuple[int, dict[str, list[str]]]] = [(0, {})]


def module_mixin(kinds: ClassKinds, name: str) -> tuple[str, ...]:
    """The subclasses of the project class ``name`` (defined once, with no base) when every
    one of them is a module; ``()`` when ``name`` is no such mixin."""
    defs = kinds.index.defs.get(name, ())
    if len(defs) != 1 or defs[0][0] not in ((), ("object",)):
        return ()
    subclasses = _subclasses(kinds.index).get(name, [])
    if not subclasses:
        return ()
    for sub in subclasses:
        if kinds.class_kind(sub)[0] is not Kind.MODULE:
            return ()
    return tuple(subclasses)


def _subclasses(index: ClassIndex) -> dict[str, list[str]]:
    if _SUBCLASSES[0][0] != id(index):
        found: dict[str, list[str]] = {}
        for sub, variants in index.defs.items():
            for bases, _ in variants:
                for base in bases:
                    found.setdefault(base.rsplit(".", 1)[-1], []).append(sub)
        _SUBCLASSES[0] = (id(index), {k: sorted(set(v)) for k, v in found.items()})
    return _SUBCLASSES[0][1]
