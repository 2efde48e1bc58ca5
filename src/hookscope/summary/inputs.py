"""Example inputs from sizes, and the meta / real stand-ins for a model's state."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from hookscope.errors import UsageError

InputSize = Sequence[int] | Sequence[Sequence[int]]


def _is_shape(value: Any) -> bool:
    return isinstance(value, Sequence) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in value
    )


def normalize_sizes(input_size: InputSize) -> list[tuple[int, ...]]:
    """``(1, 3, 32, 32)`` → one shape; ``[(1, 3), (1, 5)]`` → two shapes.

    Raises:
        UsageError: not a shape or a sequence of shapes of non-negative integers.
    """
    if isinstance(input_size, (str, bytes)) or not isinstance(input_size, Sequence):
        raise UsageError(f"input_size must be a shape or a list of shapes, got {input_size!r}")
    shapes: list[Any] = [tuple(input_size)] if _is_shape(input_size) else list(input_size)
    result: list[tuple[int, ...]] = []
    for shape in shapes:
        if not _is_shape(shape) or any(n < 0 for n in shape):
            raise UsageError(f"bad shape {shape!r} in input_size={input_size!r}")
        result.append(tuple(int(n) for n in shape))
    if not result:
        raise UsageError(f"input_size is empty: {input_size!r}")
    return result


def normalize_dtypes(
    dtypes: torch.dtype | Sequence[torch.dtype] | None, count: int
) -> list[torch.dtype]:
    """One dtype per input (a single dtype applies to all); float32 by default."""
    if dtypes is None:
        return [torch.float32] * count
    listed = [dtypes] if isinstance(dtypes, torch.dtype) else list(dtypes)
    if not all(isinstance(d, torch.dtype) for d in listed):
        raise UsageError(f"dtypes must be torch.dtype values, got {dtypes!r}")
    if len(listed) == 1:
        return listed * count
    if len(listed) != count:
        raise UsageError(f"got {len(listed)} dtypes for {count} input sizes: {dtypes!r}")
    return listed


#: Largest element count a tensor can hold (PyTorch sizes are int64).
MAX_NUMEL = 2**63 - 1


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def check_size(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> None:
    """Refuse an input that cannot exist: more elements than int64, or more bytes than RAM.

    Only a meta tensor (shape only, no data) may be larger than the machine's memory.

    Raises:
        UsageError: naming the shape and the bytes it needs.
    """
    numel = math.prod(shape)
    if numel > MAX_NUMEL:
        raise UsageError(
            f"input size {list(shape)} has {numel:,} elements, more than a tensor holds"
        )
    nbytes = numel * dtype.itemsize
    memory = _memory_bytes() if device.type == "cpu" else None
    if memory is not None and nbytes > memory:
        raise UsageError(
            f"input size {list(shape)} ({str(dtype).removeprefix('torch.')}) needs "
            f"{_gib(nbytes)}, more than this machine's {_gib(memory)} of memory"
        )


def make_tensor(
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """A random float tensor, or for integer dtypes a tensor of ones (a valid token id).

    Raises:
        UsageError: the tensor cannot be made (too large, out of memory), naming its size.
    """
    check_size(shape, dtype, device)
    try:
        if device.type == "meta":
            return torch.empty(shape, dtype=dtype, device=device)
        if dtype.is_floating_point or dtype.is_complex:
            return torch.rand(shape, dtype=dtype, device=device, generator=generator)
        return torch.ones(shape, dtype=dtype, device=device)
    except RuntimeError as exc:  # out of memory, or a size torch refuses
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"cannot make an input of size {list(shape)} on {device}: {first}"
        ) from None


def map_tensors(obj: Any, fn: Any) -> Any:
    """Apply ``fn`` to every tensor in nested tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(map_tensors(item, fn) for item in obj)
    if isinstance(obj, list):
        return [map_tensors(item, fn) for item in obj]
    if isinstance(obj, Mapping):
        return {key: map_tensors(value, fn) for key, value in obj.items()}
    return obj


def to_device(obj: Any, device: torch.device) -> Any:
    """Move every tensor in ``obj`` to ``device`` (to ``meta``: shape only, no data)."""
    return map_tensors(obj, lambda t: t if t.device == device else t.to(device))


def model_device(model: nn.Module) -> torch.device:
    """Device of the first parameter or buffer; CPU for a stateless model."""
    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return torch.device("cpu")


def all_meta(model: nn.Module) -> bool:
    """True when every parameter and buffer is on the meta device (and there is one)."""
    tensors = [*model.parameters(), *model.buffers()]
    return bool(tensors) and all(t.device.type == "meta" for t in tensors)
