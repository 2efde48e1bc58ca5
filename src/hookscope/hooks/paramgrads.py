"""Which tensors a session's gradient hooks go on: parameters, or FSDP1 flat parameters.

Under FSDP1 (``FullyShardedDataParallel``, flat or original parameters)
autograd accumulates into each unit's flat parameter, never into the
original parameters. Their names (as ``use_orig_params=True`` gives them)
are matched instead, and the hook goes on the flat parameter, handed a
detached view of the one original parameter (`hookscope.shards.FlatSlot`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookscope.hooks.describe import SLOT_ATTR, WRAPPED_ATTR
from hookscope.hooks.selection import ModuleSelector, param_matcher, select_params
from hookscope.shards import FlatSlot, flat_groups

#: A gradient hook's target: names, the tensor to hook, and for an FSDP1
#: original parameter its place in the flat parameter (else None).
Target = tuple[tuple[str, ...], torch.Tensor, FlatSlot | None]


def grad_targets(model: nn.Module, params: ModuleSelector) -> list[Target]:
    """Where gradient hooks for the parameters ``params`` selects go (FSDP1: flat parameters).

    Tied parameters come once, with every name; a predicate sees a meta
    tensor of an FSDP1 original parameter's shape.
    """
    groups = flat_groups(model)
    covered = {key for group in groups for key in group.covered}
    targets: list[Target] = [
        (names, param, None)
        for names, param in select_params(model, params)
        if id(param) not in covered
    ]
    matches = param_matcher(params)
    for group in groups:
        flat = group.flat
        for slot in group.slots:
            shape = torch.empty(slot.shape, dtype=flat.dtype, device="meta")
            if flat.requires_grad and matches(slot.names, shape):
                targets.append((slot.names, flat, slot))
    return targets


def slot_hook(wrapper: Callable[..., Any], slot: FlatSlot) -> Callable[[torch.Tensor], None]:
    """A flat parameter's post-accumulate-grad hook that calls ``wrapper`` with one original parameter."""

    def on_flat(flat: torch.Tensor) -> None:
        view = slot.view(flat)
        if view is not None:  # always, in a backward: the flat parameter is unsharded then
            wrapper(view)

    setattr(on_flat, WRAPPED_ATTR, getattr(wrapper, WRAPPED_ATTR))
    setattr(on_flat, SLOT_ATTR, slot.names)  # listed under the original parameter
    return on_flat
