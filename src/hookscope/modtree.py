"""Walking a module tree without nested generators, once per summary.

``nn.Module.named_modules`` recurses through one generator per level, so a
module at depth d costs d generator resumptions; a summary walks its model
several times (names, selection, state swaps, totals). `walk` gives the same
pairs in the same order from one explicit stack, and inside `walked` it
reuses the first walk of that model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn

Walk = tuple[tuple[str, nn.Module], ...]

#: id(model) -> {remove_duplicate: its walk}, while a `walked` block holds the model
_HELD: dict[int, dict[bool, Walk]] = {}


def walk(model: nn.Module, *, remove_duplicate: bool = True) -> Walk:
    """``tuple(model.named_modules(remove_duplicate=...))``, built with an explicit stack."""
    held = _HELD.get(id(model))
    if held is not None:
        found = held.get(remove_duplicate)
        if found is None:
            found = held[remove_duplicate] = _walk(model, remove_duplicate)
        return found
    return _walk(model, remove_duplicate)


def _walk(model: nn.Module, remove_duplicate: bool) -> Walk:
    found: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()
    stack: list[tuple[str, nn.Module]] = [("", model)]
    while stack:
        name, module = stack.pop()
        if remove_duplicate:
            if id(module) in seen:
                continue
            seen.add(id(module))
        found.append((name, module))
        children = [
            (f"{name}.{key}" if name else key, child)
            for key, child in module._modules.items()
            if child is not None
        ]
        stack.extend(reversed(children))
    return tuple(found)


@contextmanager
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
