"""Undoing what registering a hook changes besides the hook dicts.

Removing a handle deletes the hook, but two flags PyTorch sets on the way
stay: ``module._is_full_backward_hook`` (set by full backward (pre) hooks)
and a tensor's lazily created ``_post_accumulate_grad_hooks`` dict. A
session notes their values before its first registration on each object
and puts them back on close, so each module's forward takes PyTorch's
no-hook fast path again.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle


class SideEffects:
    """The flags to restore for one session (see the module docstring)."""

    def __init__(self) -> None:
        self._flags: dict[int, tuple[weakref.ref[nn.Module], bool | None]] = {}
        self._tensors: dict[int, tuple[weakref.ref[torch.Tensor], bool]] = {}

    def full_backward(
        self,
        module: nn.Module,
        register: Callable[..., RemovableHandle],
        fn: Callable[..., Any],
        prepend: bool,
    ) -> RemovableHandle:
        """``register(fn, prepend=prepend)`` (a full backward (pre) hook registration), noted."""
        # Registering a full backward (pre) hook sets module._is_full_backward_hook,
        # which removing the handle does not undo: remember the old value.
        key = id(module)
        if key not in self._flags:
            flag = module.__dict__.get("_is_full_backward_hook")
            self._flags[key] = (weakref.ref(module), flag)
        return register(fn, prepend=prepend)

    def remember_tensor(self, tensor: torch.Tensor) -> None:
        """Note whether ``tensor`` had a post-accumulate-grad hook dict before (it is created lazily)."""
        key = id(tensor)
        if key not in self._tensors:
            had = tensor._post_accumulate_grad_hooks is not None
            self._tensors[key] = (weakref.ref(tensor), had)

    def restore(self) -> None:
        """Put the noted flags back where no hook of their kind is left; forget them."""
        for ref, flag in self._flags.values():
            module = ref()
            if module is not None and not (module._backward_hooks or module._backward_pre_hooks):
                module._is_full_backward_hook = flag
        for tref, had in self._tensors.values():
            tensor = tref()
            if tensor is not None and not had and not tensor._post_accumulate_grad_hooks:
                tensor._post_accumulate_grad_hooks = None  # type: ignore[assignment]
        self._flags, self._tensors = {}, {}
