"""Choosing modules by qualified-name glob, type, predicate, or leaves only.

A module reachable under several names (a shared submodule) is selected once,
with every name it has; the first name in ``named_modules`` order is its
primary name.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch import nn

from hookscope.errors import UsageError

#: What ``modules=`` accepts: a glob on qualified names (``"layer1.*"``), a
#: module type, a predicate ``(name, module) -> bool``, or a sequence of these
#: (a module matching any of them is selected). ``None`` selects every module.
ModuleSelector = (
    str
    | type[nn.Module]
    | Callable[[str, nn.Module], bool]
    | Sequence["str | type[nn.Module] | Callable[[str, nn.Module], bool]"]
    | None
)


@dataclass(frozen=True)
class SelectedModule:
    """One selected module and every qualified name it is reachable under."""

    names: tuple[str, ...]
    module: nn.Module

    @property
    def name(self) -> str:
        """The primary (first) qualified name; ``""`` is the root."""
        return self.names[0]


def module_names(model: nn.Module) -> dict[int, tuple[str, ...]]:
    """Map ``id(module)`` to every qualified name of that module under ``model``."""
    names: dict[int, list[str]] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        names.setdefault(id(module), []).append(name)
    return {key: tuple(dict.fromkeys(value)) for key, value in names.items()}


def is_leaf(module: nn.Module) -> bool:
    """True when the module has no child modules."""
    return next(iter(module.children()), None) is None


def _matcher(selector: object) -> Callable[[str, nn.Module], bool]:
    if isinstance(selector, str):
        pattern = selector
        return lambda name, _module: fnmatch.fnmatchcase(name, pattern)
    if isinstance(selector, type):
        if not issubclass(selector, nn.Module):
            raise UsageError(f"modules= types must subclass nn.Module, got {selector!r}")
        cls = selector
        return lambda _name, module: isinstance(module, cls)
    if callable(selector):
        predicate = selector
        return lambda name, module: bool(predicate(name, module))
    raise UsageError(
        "modules= takes a glob string, an nn.Module subclass, a predicate "
        f"(name, module) -> bool, or a list of these; got {selector!r}"
    )


def select_modules(
    model: nn.Module, modules: ModuleSelector = None, *, leaves_only: bool = False
) -> list[SelectedModule]:
    """Select modules of ``model``.

    Args:
        model: the root module.
        modules: which modules (see `ModuleSelector`); ``None`` means all.
        leaves_only: keep only modules without children.

    Returns:
        The selected modules in ``named_modules`` order, each once.

    Raises:
        UsageError: the selector has an unsupported type.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"expected an nn.Module, got {type(model).__name__}")
    if modules is None:
        matchers: list[Callable[[str, nn.Module], bool]] = [lambda _n, _m: True]
    elif isinstance(modules, (str, type)) or callable(modules):
        matchers = [_matcher(modules)]
    elif isinstance(modules, (list, tuple)):
        matchers = [_matcher(item) for item in modules]
    else:
        matchers = [_matcher(modules)]
    names = module_names(model)
    selected: list[SelectedModule] = []
    seen: set[int] = set()
    for _name, module in model.named_modules():
        key = id(module)
        if key in seen or (leaves_only and not is_leaf(module)):
            continue
        all_names = names[key]
        if any(match(alias, module) for alias in all_names for match in matchers):
            seen.add(key)
            selected.append(SelectedModule(all_names, module))
    return selected
