"""Parameters and gradients that a rank holds only in part: ``DTensor`` and FSDP1 flat parameters.

No ``torch.distributed`` import here (`hookscope.dist` is the one module that
has it): a ``DTensor`` is recognised only once ``torch.distributed.tensor``
has been imported by the user's code, and FSDP1's ``FlatParameter`` through
the attributes FSDP1 puts on it.

* `local_tensor`: the readable part of a tensor, so the statistics kernels
  never see a wrapper subclass's null pointer.
* `flat_groups`: FSDP1 flattens every original parameter of a wrapped unit
  into one ``_flat_param``; each `FlatSlot` is where one original parameter
  lives inside the *unsharded* flat parameter (what autograd sees during the
  backward), so a gradient hook can be handed that parameter's own gradient.
* `grad_parts`: every parameter gradient as this rank holds it after the
  backward (``grads="reduced"``).
* `full_numels`: whole-model parameter counts from sharded modules.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hookscope.dist import initialized, world_size
from hookscope.names import wrapped_child


def local_tensor(tensor: torch.Tensor) -> torch.Tensor | None:
    """The part of ``tensor`` this process holds, as a plain tensor; None if unreadable.

    A ``DTensor`` gives its local shard. Plain tensors and ``nn.Parameter``
    come back as they are; another wrapper subclass without readable memory
    (``data_ptr() == 0`` with elements) gives None, so no kernel reads it.
    """
    if type(tensor) is torch.Tensor or type(tensor) is nn.Parameter:
        return tensor
    dtensor = _dtensor_type()
    if dtensor is not None and isinstance(tensor, dtensor):
        local: torch.Tensor = getattr(tensor, "_local_tensor")  # noqa: B009 (a DTensor field)
        return local
    try:
        readable = tensor.numel() == 0 or tensor.device.type == "meta" or tensor.data_ptr() != 0
    except (RuntimeError, NotImplementedError, TypeError):
        readable = False
    return tensor if readable else None


def _dtensor_type() -> type | None:
    module = sys.modules.get("torch.distributed.tensor")
    return getattr(module, "DTensor", None) if module is not None else None


def is_sharded(tensor: torch.Tensor) -> bool:
    """True for a ``DTensor`` with a ``Shard`` placement (its local part is not the whole)."""
    dtensor = _dtensor_type()
    if dtensor is None or not isinstance(tensor, dtensor):
        return False
    return any(placement.is_shard() for placement in getattr(tensor, "placements", ()))


# -- FSDP1 flat parameters -----------------------------------------------------------


@dataclass(frozen=True)
class FlatSlot:
    """Where one original parameter lives inside an unsharded FSDP1 flat parameter.

    Attributes:
        names: its qualified names as ``named_parameters`` gives them with
            ``use_orig_params=True`` (a tied parameter: every name, primary first).
        offset: first element in the unsharded flat parameter.
        shape: the original parameter's shape.
    """

    names: tuple[str, ...]
    offset: int
    shape: torch.Size

    @property
    def numel(self) -> int:
        """Elements of the original parameter."""
        return self.shape.numel()

    def view(self, flat: torch.Tensor) -> torch.Tensor | None:
        """This parameter inside ``flat`` (unsharded), detached, with ``.grad`` its gradient.

        None when ``flat`` is not unsharded right now (only part of it is held).
        """
        end = self.offset + self.numel
        if flat.numel() < end:
            return None
        data = flat.detach()[self.offset : end].view(self.shape)
        grad = flat.grad
        if grad is not None and grad.numel() >= end:
            data.grad = grad.detach()[self.offset : end].view(self.shape)
        return data


@dataclass(frozen=True)
class FlatGroup:
    """One FSDP1 flat parameter and the original parameters inside it.

    Attributes:
        unit: qualified name of the FSDP1 module that owns it.
        flat: the ``FlatParameter``.
        slots: its original parameters, in order.
        replicas: ranks that hold the same shard (HYBRID_SHARD: the number of
            shard groups; else 1).
        covered: ``id`` of the flat parameter and of the original ``nn.Parameter``
            objects it manages (``use_orig_params=True``), which receive no
            gradient hooks of their own.
    """

    unit: str
    flat: torch.Tensor
    slots: tuple[FlatSlot, ...]
    replicas: int
    covered: frozenset[int]


def flat_groups(model: nn.Module) -> list[FlatGroup]:
    """Every FSDP1 flat parameter under ``model`` (empty for anything else), each once."""
    groups: list[FlatGroup] = []
    if not initialized():
        return groups  # FSDP needs a process group
    seen: set[int] = set()
    for unit, module in model.named_modules():
        flat = _flat_param(module)
        if flat is None or id(flat) in seen:
            continue
        seen.add(id(flat))
        prefix = ".".join(part for part in (unit, wrapped_child(module)) if part)
        originals = getattr(flat, "_params", None) or ()
        covered = frozenset({id(flat), *(id(p) for p in originals)})
        group = getattr(module._handle, "process_group", None)  # the shard group
        replicas = max(1, world_size() // group.size()) if group is not None else 1
        groups.append(FlatGroup(unit, flat, tuple(_slots(prefix, flat)), replicas, covered))
    return groups


def _flat_param(module: nn.Module) -> Any:
    handle = getattr(module, "_handle", None)
    return getattr(handle, "flat_param", None)


def _slots(prefix: str, flat: Any) -> Iterator[FlatSlot]:
    def qualified(*parts: str) -> str:
        return ".".join(part for part in (prefix, *parts) if part)

    aliases: dict[str, list[str]] = {}
    for info in flat._shared_param_infos:
        primary = qualified(info.prim_module_name, info.prim_param_name)
        aliases.setdefault(primary, []).append(qualified(info.module_name, info.param_name))
    offsets = []
    offset = 0
    for numel, padding in zip(flat._numels_with_padding, flat._is_padding_mask, strict=True):
        if not padding:
            offsets.append(offset)
        offset += numel
    for fqn, shape, start in zip(flat._fqns, flat._shapes, offsets, strict=True):
        name = qualified(fqn)
        yield FlatSlot((name, *aliases.get(name, ())), start, torch.Size(shape))


# -- gradients after the backward ------------------------------------------------------


@dataclass(frozen=True)
class GradPart:
    """This rank's part of one parameter's gradient.

    Attributes:
        name: the parameter's qualified name as ``named_parameters`` gives it
            (FSDP1: as with ``use_orig_params=True``).
        grad: the local part (a plain tensor), or None when this rank holds none.
        sharded: True when the ranks hold different parts (FSDP): the full
            norm is the square root of the summed squares of the parts; False
            when every rank holds the whole gradient (DDP after all-reduce).
        replicas: how many ranks hold this same part: 1, or under HSDP (FSDP2
            on a 2-D mesh, FSDP1 ``HYBRID_SHARD``) the size of the replicate
            dimension, so a sum over all ranks counts each part once.
    """

    name: str
    grad: torch.Tensor | None
    sharded: bool
    replicas: int = 1


def grad_parts(model: nn.Module) -> list[GradPart]:
    """The gradient of every trainable parameter as this rank holds it, in a rank-independent order.

    Read after the backward (and after DDP's all-reduce or FSDP's
    reduce-scatter): DDP gives whole gradients, FSDP2 ``DTensor`` shards,
    FSDP1 the sharded flat gradient cut back into the original parameters.
    """
    parts: list[GradPart] = []
    covered: set[int] = set()
    for group in flat_groups(model):
        covered.update(group.covered)
        parts.extend(_flat_parts(group))
    for name, param in model.named_parameters():
        if id(param) in covered or not param.requires_grad:
            continue
        grad = param.grad
        local = None if grad is None else local_tensor(grad)
        sharded = grad is not None and is_sharded(grad)
        parts.append(GradPart(name, local, sharded, _replicas(grad) if sharded else 1))
    return parts


def _replicas(dtensor: Any) -> int:
    """The product of the mesh dimensions a ``DTensor`` is replicated over."""
    mesh = dtensor.device_mesh
    return math.prod(
        mesh.size(dim)
        for dim, placement in enumerate(dtensor.placements)
        if placement.is_replicate()
    )


def _flat_parts(group: FlatGroup) -> Iterable[GradPart]:
    flat: Any = group.flat
    grad = flat.grad
    infos = flat._shard_param_infos
    sharded = any(not info.in_shard for info in infos) or bool(
        sum(info.numel_in_shard or 0 for info in infos) < sum(flat._numels)
    )
    for slot, info in zip(group.slots, infos, strict=True):
        part = None
        if grad is not None and info.in_shard:
            part = grad.detach()[info.offset_in_shard : info.offset_in_shard + info.numel_in_shard]
        yield GradPart(slot.names[0], part, sharded, group.replicas if sharded else 1)


def full_numels(model: nn.Module) -> dict[int, int]:
    """``id(param) -> element count of the whole parameter`` where a rank holds only a shard.

    FSDP1 flat parameters map to the sum of their original parameters (no
    padding, shared parameters once); with ``use_orig_params=True`` each
    original parameter maps to its unsharded size. ``DTensor`` parameters
    (FSDP2) already report their global size and are not listed.
    """
    out: dict[int, int] = {}
    for group in flat_groups(model):
        flat: Any = group.flat
        out[id(flat)] = int(sum(flat._numels))
        for param, numel in zip(getattr(flat, "_params", None) or (), flat._numels, strict=False):
            out[id(param)] = int(numel)
    return out
