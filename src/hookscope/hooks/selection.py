"""Choosing modules by qualified-name glob, type, predicate, or leaves only.

A module reachable under several names (a shared submodule) is selected once,
with every name it has; the first name in ``named_modules`` order is its
primary name.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from torch import nn

from hookscope.errors import UsageError
from hookscope.modtree import aliases, walk
from hookscope.names import strip_wrappers

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
    return aliases(model)


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
    if modules is None and not leaves_only:  # every module: nothing to match
        return [SelectedModule(names[id(module)], module) for _, module in walk(model)]
    selected: list[SelectedModule] = []
    seen: set[int] = set()
    for _name, module in walk(model):
        key = id(module)
        if key in seen or (leaves_only and not is_leaf(module)):
            continue
        all_names = names[key]
        if any(match(alias, module) for alias in all_names for match in matchers):
            seen.add(key)
            selected.append(SelectedModule(all_names, module))
    return selected


def nothing_selected(
    model: nn.Module, modules: ModuleSelector, *, leaves_only: bool = False
) -> str:
    """Why ``modules`` selected nothing in ``model``, with the closest names (for an error or warning).

    Globs are compared with every qualified name, module types with the types
    in the model (`difflib`); otherwise the message lists the model's first names.
    """
    names = [name for name, _ in walk(model) if name]
    types = sorted({type(module).__name__ for _, module in walk(model)})
    items = list(modules) if isinstance(modules, (list, tuple)) else [modules]
    hints: list[str] = []
    for item in items:
        if isinstance(item, str):
            bare = item.replace("*", "").replace("?", "")
            hints += [repr(n) for n in difflib.get_close_matches(bare, names, 3, 0.3)]
        elif isinstance(item, type):
            close = difflib.get_close_matches(item.__name__, types, 3, 0.3) or types[:6]
            hints += [f"{t} (first: {_first_of(model, t)!r})" for t in close]
    shown = ", ".join(dict.fromkeys(hints)) or ", ".join(repr(n) for n in names[:6])
    what = ", ".join(_shown(item) for item in items)
    leaves = " among the leaf modules" if leaves_only else ""
    return (
        f"modules={what} matches no module{leaves} of {type(model).__name__}; "
        f"closest: {shown or '(it has no submodules)'}"
    )


def _shown(item: object) -> str:
    return item.__name__ if isinstance(item, type) else repr(item)


def _first_of(model: nn.Module, type_name: str) -> str:
    return next((n for n, m in walk(model) if type(m).__name__ == type_name), "")


def _glob_match(pattern: str, name: str, _param: Any) -> bool:
    return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(strip_wrappers(name), pattern)


def _predicate_match(predicate: Callable[[str, Any], Any], name: str, param: Any) -> bool:
    return bool(predicate(name, param))


def param_matcher(params: ModuleSelector) -> Callable[[tuple[str, ...], Any], bool]:
    """``params=`` as a test ``(names, param) -> bool``: does any name match any item?

    Globs match a name as given or without wrapper components
    (``"layer.fc1.weight"`` matches ``"module.layer.fc1.weight"`` under DDP).

    Raises:
        UsageError: an item is neither a glob nor a predicate ``(name, param)``.
    """
    if params is None:
        return lambda _names, _param: True
    items: list[Any] = [params] if isinstance(params, str) or callable(params) else list(params)
    matchers: list[Callable[[str, Any], bool]] = []
    for item in items:
        if isinstance(item, str):
            matchers.append(partial(_glob_match, item))
        elif callable(item) and not isinstance(item, type):
            matchers.append(partial(_predicate_match, item))
        else:
            raise UsageError(f"params= takes globs or a predicate (name, param); got {item!r}")
    return lambda names, param: any(m(n, param) for n in names for m in matchers)


def select_params(
    model: nn.Module, params: ModuleSelector
) -> list[tuple[tuple[str, ...], nn.Parameter]]:
    """Parameters that require grad, chosen by glob on their names or a predicate.

    Tied parameters are selected once, with every name they have.
    """
    names: dict[int, list[str]] = {}
    tensors: dict[int, nn.Parameter] = {}
    for pname, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(pname)
        tensors[id(param)] = param
    matches = param_matcher(params)
    selected = []
    for key, pnames in names.items():
        param = tensors[key]
        unique = tuple(dict.fromkeys(pnames))
        if param.requires_grad and matches(unique, param):
            selected.append((unique, param))
    return selected
