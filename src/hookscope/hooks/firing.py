"""Counting how often every hook on a model fires, whoever registered it.

`FiringCounter` swaps each hook in PyTorch's hook dicts (module forward /
forward-pre / backward / backward-pre hooks, tensor hooks on parameters and
buffers, global module hooks) for a counting proxy *under the same key*, and
puts the original callables back on exit. Keys, order and the side tables
keyed by handle id (``_forward_hooks_with_kwargs``, ``..._always_called``)
are untouched, so hooks behave exactly as before; a hook removed while
counting stays removed.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as torch_module

from hookscope._interrupts import critical, setup_interrupted
from hookscope.errors import UsageError
from hookscope.hooks.describe import SLOT_ATTR, callable_name, callable_source, is_hookscope_hook
from hookscope.hooks.selection import module_names
from hookscope.shards import flat_groups

#: Attribute on a counting proxy holding the hook it counts.
COUNTED_ATTR = "__hookscope_counted__"

_MODULE_DICTS = (
    ("_forward_pre_hooks", "forward_pre"),
    ("_forward_hooks", "forward"),
    ("_backward_pre_hooks", "backward_pre"),
    ("_backward_hooks", "backward"),
)
_TENSOR_DICTS = (
    ("_backward_hooks", "tensor_grad"),
    ("_post_accumulate_grad_hooks", "post_accumulate_grad"),
)
_GLOBAL_DICTS = (
    ("_global_forward_pre_hooks", "global_forward_pre"),
    ("_global_forward_hooks", "global_forward"),
    ("_global_backward_pre_hooks", "global_backward_pre"),
    ("_global_backward_hooks", "global_backward"),
)


@dataclass(eq=False)
class CountedHook:
    """One hook being counted.

    Attributes:
        names: qualified names of the module (or parameter/buffer) it sits on;
            ``("*",)`` for a global module hook.
        kind: ``forward``, ``forward_pre``, ``backward``, ``backward_pre``,
            ``tensor_grad``, ``post_accumulate_grad`` or ``global_*``.
        hook: the callable's qualified name; ``source`` its ``file:line``.
        owner: weak reference to the module or tensor (None for global hooks).
        count: firings since counting began.
    """

    names: tuple[str, ...]
    kind: str
    hook: str
    source: str | None
    by_hookscope: bool
    owner: weakref.ref[Any] | None
    count: int = 0
    _restore: tuple[MutableMapping[int, Any], int, Any, Any] | None = field(
        default=None, repr=False
    )


def _counting(entry: CountedHook, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        entry.count += 1
        return fn(*args, **kwargs)

    counted.__qualname__ = f"hookscope.count[{entry.hook}]"
    setattr(counted, COUNTED_ATTR, fn)
    return counted


class FiringCounter:
    """Context manager counting every hook on ``model`` (see the module docstring)."""

    def __init__(self, model: nn.Module) -> None:
        if not isinstance(model, nn.Module):
            raise UsageError(f"expected an nn.Module, got {type(model).__name__}")
        self.model = model
        self.hooks: list[CountedHook] = []

    @critical
    def __enter__(self) -> FiringCounter:
        names = module_names(self.model)
        seen: set[int] = set()
        for _name, module in self.model.named_modules():
            if id(module) not in seen:
                seen.add(id(module))
                for attr, kind in _MODULE_DICTS:
                    self._wrap(getattr(module, attr), names[id(module)], kind, module)
        for tnames, tensor in model_tensors(self.model):
            for attr, kind in _TENSOR_DICTS:
                hooks = getattr(tensor, attr, None)
                if hooks:
                    self._wrap(hooks, tnames, kind, tensor)
        for attr, kind in _GLOBAL_DICTS:
            self._wrap(getattr(torch_module, attr), ("*",), kind, None)
        if setup_interrupted():  # `with` would not call __exit__
            self.__exit__(None, None, None)
        return self

    @critical
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for entry in self.hooks:
            if entry._restore is None:
                continue
            hooks, key, counted, original = entry._restore
            if hooks.get(key) is counted:
                hooks[key] = original
            entry._restore = None

    def _wrap(
        self, hooks: MutableMapping[int, Any], names: tuple[str, ...], kind: str, owner: Any
    ) -> None:
        for key, fn in list(hooks.items()):
            entry = CountedHook(
                names=getattr(fn, SLOT_ATTR, names),
                kind=kind,
                hook=callable_name(fn),
                source=callable_source(fn),
                by_hookscope=is_hookscope_hook(fn),
                owner=None if owner is None else weakref.ref(owner),
            )
            counted = _counting(entry, fn)
            entry._restore = (hooks, key, counted, fn)
            hooks[key] = counted
            self.hooks.append(entry)


def model_tensors(model: nn.Module) -> list[tuple[tuple[str, ...], torch.Tensor]]:
    """Every parameter and buffer of ``model`` once, with all its names.

    FSDP1 flat parameters are included also where ``use_orig_params=True``
    hides them from ``named_parameters`` (gradient hooks go on them).
    """
    names: dict[int, list[str]] = {}
    tensors: dict[int, torch.Tensor] = {}
    for tname, tensor in [
        *model.named_parameters(remove_duplicate=False),
        *model.named_buffers(remove_duplicate=False),
    ]:
        names.setdefault(id(tensor), []).append(tname)
        tensors[id(tensor)] = tensor
    for group in flat_groups(model):
        if id(group.flat) not in tensors:
            names[id(group.flat)] = [f"{group.unit}._flat_param".lstrip(".")]
            tensors[id(group.flat)] = group.flat
    return [(tuple(dict.fromkeys(names[key])), tensors[key]) for key in names]
