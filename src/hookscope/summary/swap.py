"""Stand-ins for a model's parameters and buffers while the summary runs.

``torch.func.functional_call`` is not used: with a submodule reachable under
two names it puts a stand-in back instead of the original parameter. Here
every module's own ``_parameters`` / ``_buffers`` entries are swapped and
restored by module object, so shared modules and tied weights come back as
the very same objects, also when the forward raises.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from functools import partial

import torch
from torch import nn

from hookscope._interrupts import critical_contextmanager
from hookscope.modtree import walk

#: id(original) -> (a weak reference to it, what it was like, its meta stand-in), while it lives
_META_STAND_INS: dict[int, tuple[weakref.ref[torch.Tensor], tuple[object, ...], torch.Tensor]] = {}


def _meta_stand_in(tensor: torch.Tensor, is_param: bool) -> torch.Tensor:
    """A meta tensor like ``tensor``: the one made last time while it still matches."""
    if tensor.is_meta:
        return tensor
    like = (tensor.shape, tensor.stride(), tensor.dtype, tensor.requires_grad, is_param)
    held = _META_STAND_INS.get(id(tensor))
    if held is not None and held[1] == like and held[0]() is tensor:
        return held[2]
    fake = torch.empty_like(tensor, device="meta")
    made = nn.Parameter(fake, requires_grad=tensor.requires_grad) if is_param else fake
    key = id(tensor)
    forget = weakref.ref(tensor, lambda _: _META_STAND_INS.pop(key, None))
    _META_STAND_INS[key] = (forget, like, made)
    return made


def _real_stand_in(tensor: torch.Tensor, is_param: bool, device: torch.device) -> torch.Tensor:
    if is_param:
        if tensor.device == device:
            return tensor  # used as is: the forward runs under no_grad
        moved = tensor.detach().to(device)
        return nn.Parameter(moved, requires_grad=tensor.requires_grad)
    # Buffers are always copies: BatchNorm statistics, caches stay the model's own.
    return tensor.detach().to(device, copy=True)


@critical_contextmanager
def stand_ins(model: nn.Module, device: torch.device) -> Iterator[None]:
    """Run the body with ``model``'s state on ``device``; the originals come back after.

    On meta: shape-only stand-ins (no memory), reused by later summaries
    while the original lives and its shape, strides, dtype and
    ``requires_grad`` still match. On a real device: parameters
    as they are when already there, else copies; buffers always copies.
    A tensor tied into several places gets one stand-in, so ties hold.
    The swaps and the restore run to their end under Ctrl-C
    (`hookscope._interrupts`); each original is recorded before it is replaced.
    """
    saved: list[tuple[dict[str, torch.Tensor | None], str, torch.Tensor]] = []
    # On meta, `_meta_stand_in` itself gives a tied tensor its one stand-in.
    replacements: dict[int, torch.Tensor] | None = None if device.type == "meta" else {}
    make = _meta_stand_in if device.type == "meta" else partial(_real_stand_in, device=device)
    try:
        for _, module in walk(model):  # each module once
            for store, is_param in ((module._parameters, True), (module._buffers, False)):
                if not store:
                    continue
                for name, tensor in store.items():  # values replaced, no key added or removed
                    if tensor is None:
                        continue
                    new = None if replacements is None else replacements.get(id(tensor))
                    if new is None:
                        new = make(tensor, is_param)
                        if replacements is not None:
                            replacements[id(tensor)] = new
                    if new is not tensor:
                        saved.append((store, name, tensor))  # type: ignore[arg-type]
                        store[name] = new  # type: ignore[assignment]
        yield
    finally:
        for store, name, tensor in reversed(saved):
            store[name] = tensor
