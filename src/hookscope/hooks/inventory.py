"""Inventory of every hook on a model, whoever registered it.

Reads PyTorch's own hook dicts: module forward / forward-pre / backward /
backward-pre hooks, state-dict hooks, tensor hooks on parameters and buffers
(``Tensor.register_hook`` and post-accumulate-grad hooks), and the global
module hooks in ``torch.nn.modules.module``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as torch_module

from hookscope.hooks.describe import SLOT_ATTR, callable_name, callable_source, is_hookscope_hook
from hookscope.hooks.firing import model_tensors
from hookscope.hooks.selection import module_names

#: (attribute on nn.Module, kind reported)
_MODULE_DICTS = (
    ("_forward_pre_hooks", "forward_pre"),
    ("_forward_hooks", "forward"),
    ("_backward_pre_hooks", "backward_pre"),
    ("_backward_hooks", "backward"),
    ("_state_dict_pre_hooks", "state_dict_pre"),
    ("_state_dict_hooks", "state_dict"),
    ("_load_state_dict_pre_hooks", "load_state_dict_pre"),
    ("_load_state_dict_post_hooks", "load_state_dict_post"),
)

_GLOBAL_DICTS = (
    ("_global_forward_pre_hooks", "global_forward_pre"),
    ("_global_forward_hooks", "global_forward"),
    ("_global_backward_pre_hooks", "global_backward_pre"),
    ("_global_backward_hooks", "global_backward"),
)


@dataclass(frozen=True)
class HookInfo:
    """One hook found on a model.

    Attributes:
        module: qualified name of the module (``""`` is the root; ``"*"`` for a
            global hook); for a tensor hook, the parameter or buffer name.
        names: every qualified name of that module (shared modules have several).
        kind: ``forward``, ``forward_pre``, ``backward``, ``backward_pre``,
            ``state_dict...``, ``tensor_grad``, ``post_accumulate_grad`` or ``global_*``.
        hook: the hook function's qualified name.
        source: ``file:line`` where it is defined, or None.
        by_hookscope: True when a hookscope session added it.
        handle_id: PyTorch's handle id (the key in the hook dict).
    """

    module: str
    names: tuple[str, ...]
    kind: str
    hook: str
    source: str | None
    by_hookscope: bool
    handle_id: int

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for JSON)."""
        data = asdict(self)
        data["names"] = list(self.names)
        return data


class HookInventory(list[HookInfo]):
    """A list of `HookInfo` with table and data views."""

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every hook as a plain dict."""
        return [info.to_dict() for info in self]

    def by_module(self, name: str) -> list[HookInfo]:
        """Hooks on the module (or tensor) reachable as ``name``."""
        return [info for info in self if name in info.names]


def _info(names: tuple[str, ...], kind: str, key: int, fn: Any) -> HookInfo:
    return HookInfo(
        module=names[0],
        names=names,
        kind=kind,
        hook=callable_name(fn),
        source=callable_source(fn),
        by_hookscope=is_hookscope_hook(fn),
        handle_id=key,
    )


def _tensor_hooks(names: tuple[str, ...], tensor: torch.Tensor) -> Iterator[HookInfo]:
    # Tensor.register_hook stores into tensor._backward_hooks; post-accumulate
    # hooks into tensor._post_accumulate_grad_hooks. Both are None until used.
    for attr, kind in (
        ("_backward_hooks", "tensor_grad"),
        ("_post_accumulate_grad_hooks", "post_accumulate_grad"),
    ):
        hooks = getattr(tensor, attr, None) or {}
        for key, fn in hooks.items():
            yield _info(getattr(fn, SLOT_ATTR, names), kind, key, fn)


def list_hooks(model: nn.Module) -> HookInventory:
    """Every hook on ``model`` from any origin, in module order.

    Args:
        model: the root module.

    Returns:
        A `HookInventory` (a list of `HookInfo`); ``hookscope.cli`` renders it
        as a table.
    """
    found = HookInventory()
    names = module_names(model)
    seen: set[int] = set()
    for _name, module in model.named_modules():
        if id(module) in seen:
            continue
        seen.add(id(module))
        module_alias = names[id(module)]
        for attr, kind in _MODULE_DICTS:
            for key, fn in getattr(module, attr, {}).items():
                found.append(_info(module_alias, kind, key, fn))
    for tnames, tensor in model_tensors(model):
        found.extend(_tensor_hooks(tnames, tensor))
    for attr, kind in _GLOBAL_DICTS:
        for key, fn in getattr(torch_module, attr, {}).items():
            found.append(_info(("*",), kind, key, fn))
    return found
