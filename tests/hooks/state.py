"""Snapshots of every place PyTorch keeps hook state, to prove sessions leave no trace."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as torch_module

HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)
GLOBAL_DICTS = (
    "_global_forward_pre_hooks",
    "_global_forward_hooks",
    "_global_forward_hooks_always_called",
    "_global_forward_hooks_with_kwargs",
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
)


def hook_state(model: nn.Module) -> dict[str, Any]:
    """Everything a session could leave behind, as comparable plain data."""
    state: dict[str, Any] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        state[f"{name}:__dict__"] = sorted(module.__dict__)
        state[f"{name}:_is_full_backward_hook"] = module._is_full_backward_hook
        for attr in HOOK_DICTS:
            state[f"{name}:{attr}"] = list(getattr(module, attr).keys())
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        state[f"{name}:tensor_hooks"] = (
            None if tensor._backward_hooks is None else list(tensor._backward_hooks)
        )
        post = tensor._post_accumulate_grad_hooks
        state[f"{name}:post_accumulate"] = None if post is None else list(post)
    for attr in GLOBAL_DICTS:
        state[f"global:{attr}"] = list(getattr(torch_module, attr).keys())
    return state


def state_dict_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached copy of the model's state dict."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_same_state_dict(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    """Same keys, same values."""
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
