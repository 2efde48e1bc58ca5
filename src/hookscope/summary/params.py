"""Exact parameter and buffer counts: tied and shared tensors once.

Totals come from the root module, never from summing rows: a shared module
shows in several rows, and tied weights (an LM head sharing the embedding
matrix) sit in two modules, yet each tensor counts once. Two tensors are the
same when they are the same object or view the same storage at the same
offset, shape and stride (meta tensors have no storage: identity only).

Sharded models count whole: an FSDP1 flat parameter (and, with
``use_orig_params=True``, each original parameter) counts the elements of
the unsharded parameters (`hookscope.shards.full_numels`); FSDP2 ``DTensor``
parameters report their global size already.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch
from torch import nn

from hookscope.modtree import walk
from hookscope.shards import full_numels

Trainable = Literal["yes", "no", "partial", ""]
_PLAIN_TENSORS = (torch.Tensor, nn.Parameter)


def tensor_key(tensor: torch.Tensor) -> tuple[object, ...]:
    """Identity of a tensor's data: tied tensors get equal keys."""
    if tensor.device.type == "meta" or tensor.numel() == 0:
        return ("id", id(tensor))
    try:
        ptr = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # tensor subclasses without storage
        return ("id", id(tensor))
    return ("data", tensor.device.type, ptr, tensor.storage_offset(), tensor.shape, tensor.stride())


def unique_tensors(tensors: Iterable[torch.Tensor]) -> list[torch.Tensor]:
    """``tensors`` with tied and repeated ones dropped (first occurrence kept)."""
    kept = list({id(t): t for t in tensors}.values())
    try:
        if len({_address(t) for t in kept}) == len(kept):
            return kept  # distinct addresses: distinct data, no full keys needed
    except _Tied:
        pass
    seen: set[tuple[object, ...]] = set()
    unique = []
    for tensor in kept:
        key = tensor_key(tensor)
        if key not in seen:
            seen.add(key)
            unique.append(tensor)
    return unique


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` → ``"float32"``."""
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class ParamTotals:
    """Whole-model parameter and buffer totals."""

    params: int
    trainable: int
    frozen: int
    param_bytes: int
    params_by_dtype: dict[str, int]
    param_bytes_by_dtype: dict[str, int]
    buffers: int
    buffer_bytes: int


def model_totals(model: nn.Module) -> ParamTotals:
    """Count ``model``'s parameters and buffers, each tensor once."""
    modules = [module for _, module in walk(model, remove_duplicate=False)]
    params = unique_tensors(p for m in modules for p in m._parameters.values() if p is not None)
    return _totals(model, params, [b for m in modules for b in m._buffers.values()])


def count_params(model: nn.Module) -> tuple[ParamTotals, dict[int, ModuleParams]]:
    """`model_totals` and `params_by_module` together: one pass where nothing is tied."""
    params: list[torch.Tensor] = []
    buffers: list[torch.Tensor | None] = []
    try:
        per_module = _sums_without_ties(model, params, buffers)
    except _Tied:
        return model_totals(model), _merged_sets(model)
    return _totals(model, params, buffers), per_module


def _totals(
    model: nn.Module, params: list[torch.Tensor], buffers: list[torch.Tensor | None]
) -> ParamTotals:
    """Totals of distinct ``params`` and of ``buffers`` (each once; None skipped)."""
    whole = full_numels(model)
    numels: dict[torch.dtype, int] = {}
    trainable = 0
    for param in params:
        numel = whole.get(id(param), param.numel()) if whole else param.numel()
        numels[param.dtype] = numels.get(param.dtype, 0) + numel
        trainable += numel if param.requires_grad else 0
    by_dtype = {dtype_name(dtype): numel for dtype, numel in numels.items()}
    bytes_by_dtype = {dtype_name(dtype): numel * dtype.itemsize for dtype, numel in numels.items()}
    total = sum(by_dtype.values())
    distinct = unique_tensors(b for b in buffers if b is not None)
    return ParamTotals(
        params=total,
        trainable=trainable,
        frozen=total - trainable,
        param_bytes=sum(bytes_by_dtype.values()),
        params_by_dtype=dict(sorted(by_dtype.items())),
        param_bytes_by_dtype=dict(sorted(bytes_by_dtype.items())),
        buffers=sum(b.numel() for b in distinct),
        buffer_bytes=sum(b.numel() * b.element_size() for b in distinct),
    )


class ModuleParams(NamedTuple):
    """Parameters of one module: its own, and all under it (each tensor once).

    A named tuple, not a dataclass: one is made per module per summary, and
    a frozen dataclass costs five times as much to make.
    """

    own: int
    total: int
    trainable: Trainable


def params_by_module(model: nn.Module) -> dict[int, ModuleParams]:
    """Own and total parameter counts of ``model`` and every module under it, by ``id``.

    Without tied tensors or shared modules a module's total is its own count
    plus its children's totals; otherwise each module's set of parameters is
    its own plus its children's, merged by `tensor_key` (tied tensors once).
    """
    try:
        return _sums_without_ties(model, [], [])
    except _Tied:
        return _merged_sets(model)


class _Tied(Exception):
    """A tensor or a module is reachable twice: plain sums would count it twice."""


def _sums_without_ties(
    model: nn.Module, params: list[torch.Tensor], buffers: list[torch.Tensor | None]
) -> dict[int, ModuleParams]:
    """Per-module sums; every parameter goes into ``params``, every buffer into ``buffers``."""
    # A data address (or, on meta, the object) seen twice may be a tie: then the
    # exact merge decides. Distinct addresses are distinct tensors.
    keys: set[int] = set()
    visited: set[int] = set()
    result: dict[int, ModuleParams] = {}

    def visit(module: nn.Module) -> tuple[int, int]:
        if id(module) in visited:
            raise _Tied
        visited.add(id(module))
        buffers.extend(module._buffers.values())
        own = own_trainable = 0
        for param in module._parameters.values():
            if param is not None:
                key = _address(param)
                if key in keys:
                    raise _Tied
                keys.add(key)
                params.append(param)
                numel = param.numel()
                own += numel
                own_trainable += numel if param.requires_grad else 0
        count, trainable = own, own_trainable
        for child in module._modules.values():
            if child is not None:
                below, below_trainable = visit(child)
                count += below
                trainable += below_trainable
        result[id(module)] = ModuleParams(own, count, _trainable_label(count, trainable))
        return count, trainable

    visit(model)
    return result


def _address(tensor: torch.Tensor) -> int:
    """Where a plain tensor's data starts (a meta tensor's identity).

    Raises:
        _Tied: a tensor subclass (FSDP2's DTensor: its ``data_ptr`` is no
            identity); `tensor_key` decides for those.
    """
    if type(tensor) not in _PLAIN_TENSORS:
        raise _Tied
    return id(tensor) if tensor.is_meta else tensor.data_ptr()


def _trainable_label(count: int, trainable: int) -> Trainable:
    if not count:
        return ""
    return "yes" if trainable == count else "no" if trainable == 0 else "partial"


def _merged_sets(model: nn.Module) -> dict[int, ModuleParams]:
    numels: dict[tuple[object, ...], int] = {}
    trained: dict[tuple[object, ...], int] = {}
    subtree: dict[int, dict[tuple[object, ...], None]] = {}
    result: dict[int, ModuleParams] = {}

    def visit(module: nn.Module) -> dict[tuple[object, ...], None]:
        done = subtree.get(id(module))
        if done is not None:
            return done
        own: dict[tuple[object, ...], None] = {}
        for param in module._parameters.values():
            if param is not None:
                key = tensor_key(param)
                own[key] = None
                numels[key] = param.numel()
                trained[key] = param.numel() if param.requires_grad else 0
        total = dict(own)
        for child in module._modules.values():
            if child is not None:
                total.update(visit(child))
        count = sum(map(numels.__getitem__, total))
        label = _trainable_label(count, sum(map(trained.__getitem__, total)))
        result[id(module)] = ModuleParams(sum(map(numels.__getitem__, own)), count, label)
        subtree[id(module)] = total
        return total

    visit(model)
    return result
