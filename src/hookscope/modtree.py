"""Walking a module tree without nested generators, once per summary.

``nn.Module.named_modules`` recurses through one generator per level, so a
module at depth d costs d generator resumptions; a summary walks its model
several times (names, selection, state swaps, totals). `walk` gives the same
pairs in the same order from one explicit stack, and inside `walked` it
reuses the first walk of that model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import nn

from hookscope._interrupts import critical_contextmanager

Walk = tuple[tuple[str, nn.Module], ...]

#: id(model) -> {remove_duplicate: its walk, "aliases": ...}, while a `walked` block holds it
_HELD: dict[int, dict[object, Any]] = {}


def walk(model: nn.Module, *, remove_duplicate: bool = True) -> Walk:
    """``tuple(model.named_modules(remove_duplicate=...))``, built with an explicit stack."""
    held = _HELD.get(id(model))
    if held is None:
        return _walk(model, remove_duplicate)[0]
    found = held.get(remove_duplicate)
    if found is None:
        found, repeats = _walk(model, remove_duplicate)
        held[remove_duplicate] = found
        if not repeats:  # no module reachable twice: both walks are this one
            held[not remove_duplicate] = found
    return found


def aliases(model: nn.Module) -> dict[int, tuple[str, ...]]:
    """``id(module)`` -> every qualified name of that module under ``model``, in walk order."""
    held = _HELD.get(id(model))
    if held is not None and "aliases" in held:
        return held["aliases"]
    names: dict[int, list[str]] = {}
    for name, module in walk(model, remove_duplicate=False):
        names.setdefault(id(module), []).append(name)
    found = {key: tuple(dict.fromkeys(value)) for key, value in names.items()}
    if held is not None:
        held["aliases"] = found
    return found


def _walk(model: nn.Module, remove_duplicate: bool) -> tuple[Walk, bool]:
    """The walk, and whether some module was reached twice."""
    found: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()
    repeats = False
    stack: list[tuple[str, nn.Module]] = [("", model)]
    while stack:
        name, module = stack.pop()
        if id(module) in seen:
            repeats = True
            if remove_duplicate:
                continue
        seen.add(id(module))
        found.append((name, module))
        if module._modules:  # most modules are leaves
            children = [
                (f"{name}.{key}" if name else key, child)
                for key, child in module._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))
    return tuple(found), repeats


@critical_contextmanager
def walked(model: nn.Module) -> Iterator[None]:
    """Inside the block, `walk` of ``model`` walks once per ``remove_duplicate`` flag.

    For a caller that does not change the model's module tree in the block
    (the summary: modules added by the forward itself are not listed).
    """
    if id(model) in _HELD:  # an outer block holds it already
        yield
        return
    _HELD[id(model)] = {}
    try:
        yield
    finally:
        _HELD.pop(id(model), None)
