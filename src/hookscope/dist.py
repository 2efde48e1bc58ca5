"""torch.distributed for hookscope: ranks, per-rank files, guarded collectives, local shards.

This is the one module of hookscope that imports ``torch.distributed``; the
Monitor, the sinks, the summary and the report call it.

* Rank and world size come from the default process group when one is
  initialised, else from the ``RANK`` / ``WORLD_SIZE`` variables that
  ``torchrun`` sets before the script starts (so files opened before
  ``init_process_group`` already carry the rank).
* Files: with a world size above 1, ``monitor.jsonl`` becomes
  ``monitor.rank3.jsonl`` and ``tensorboard/`` becomes ``tensorboard/rank3/``;
  no two ranks ever share a file.
* Collectives are entered by every rank of the default group. Each one here
  is waited on with a timeout (`collective_timeout`, seconds, from
  ``$HOOKSCOPE_COLLECTIVE_TIMEOUT``, default 300): a rank that waits longer
  raises `DistributedError` naming the call, instead of hanging until the
  process group's own timeout (30 minutes by default) or forever.
* Tensor subclasses: a ``DTensor`` (FSDP2 parameters and gradients, tensor
  parallel outputs) is reduced through its local shard; other wrapper
  subclasses that hold no readable memory are skipped (`local_tensor`).
  FSDP1 flat parameters are mapped back to the original parameters
  (`grad_parts`, `full_numels`).
"""

from __future__ import annotations

import datetime
import os
import sys
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from hookscope.errors import DistributedError

_DEFAULT_TIMEOUT = 300.0
ReduceOp = Literal["sum", "min"]


def _dist() -> Any:
    """``torch.distributed`` when this build has it, else None."""
    import torch.distributed as tdist

    return tdist if tdist.is_available() else None


def initialized() -> bool:
    """True when a default process group exists."""
    tdist = _dist()
    return bool(tdist is not None and tdist.is_initialized())


def rank() -> int:
    """This process's global rank (0 outside torch.distributed)."""
    if initialized():
        return int(_dist().get_rank())
    return _env_int("RANK", 0)


def world_size() -> int:
    """The number of ranks (1 outside torch.distributed)."""
    if initialized():
        return int(_dist().get_world_size())
    return _env_int("WORLD_SIZE", 1)


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def rank_file(path: str | os.PathLike[str]) -> Path:
    """``path`` for this rank: ``monitor.jsonl`` -> ``monitor.rank1.jsonl`` when world size > 1."""
    file = Path(path)
    if world_size() <= 1 or ".rank" in file.name:
        return file
    return file.with_name(f"{file.stem}.rank{rank()}{file.suffix}")


def rank_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` for this rank: ``tensorboard`` -> ``tensorboard/rank1`` when world size > 1."""
    folder = Path(path)
    if world_size() <= 1 or folder.name.startswith("rank"):
        return folder
    return folder / f"rank{rank()}"


def collective_timeout() -> float:
    """Seconds a rank waits for the others in a hookscope collective."""
    try:
        value = float(os.environ.get("HOOKSCOPE_COLLECTIVE_TIMEOUT", _DEFAULT_TIMEOUT))
    except ValueError:
        return _DEFAULT_TIMEOUT
    return value if value > 0 else _DEFAULT_TIMEOUT


def all_reduce(vector: torch.Tensor, op: ReduceOp, what: str) -> torch.Tensor:
    """All-reduce ``vector`` in place (``"sum"`` or ``"min"``), waiting at most `collective_timeout`.

    Raises:
        DistributedError: the other ranks did not enter the collective in time
            (a rank skipped ``what``, or called it a different number of times).
    """
    tdist = _dist()
    ops = {"sum": tdist.ReduceOp.SUM, "min": tdist.ReduceOp.MIN}
    work = tdist.all_reduce(vector, op=ops[op], async_op=True)
    _wait(work, what)
    return vector


def broadcast(obj: object, src: int, what: str) -> object:
    """``obj`` from rank ``src`` on every rank (a small picklable object)."""
    tdist = _dist()
    box = [obj]
    try:
        tdist.broadcast_object_list(box, src=src)
    except RuntimeError as exc:
        raise DistributedError(f"{what}: broadcast from rank {src} failed ({exc})") from None
    return box[0]


def _wait(work: Any, what: str) -> None:
    timeout = collective_timeout()
    try:
        done = work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as exc:
        done = False
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    else:
        reason = "timed out"
    if done is False:
        raise DistributedError(
            f"rank {rank()}: {what} waited {timeout:g} s for the other ranks ({reason}). "
            "It is a collective: every rank must call it, the same number of times "
            "(set HOOKSCOPE_COLLECTIVE_TIMEOUT to wait longer)"
        )


def agree(keys: Sequence[object], code: float, what: str) -> tuple[bool, float]:
    """One MIN all-reduce: do all ranks hold the same ``keys``? And the smallest ``code``.

    The key count and a CRC of the keys are reduced both as they are and
    negated, so one MIN yields their minimum and maximum over the ranks.
    """
    crc = float(zlib.crc32(repr(list(keys)).encode()))
    count = float(len(keys))
    header = torch.tensor([count, crc, -count, -crc, code], dtype=torch.float64)
    out = all_reduce(_on_device(header), "min", what).cpu().tolist()
    same = out[0] == -out[2] and out[1] == -out[3]
    return same, out[4]


def _on_device(vector: torch.Tensor) -> torch.Tensor:
    """NCCL reduces device tensors only; gloo takes CPU tensors."""
    backend = str(_dist().get_backend())
    if "nccl" in backend and torch.cuda.is_available():
        return vector.to(torch.device("cuda", torch.cuda.current_device()))
    return vector


def reduce_vectors(sums: torch.Tensor, mins: torch.Tensor, what: str) -> None:
    """SUM-reduce ``sums`` and MIN-reduce ``mins`` across ranks, in place.

    Two collectives, both in flight at once (one wait instead of two).
    """
    tdist = _dist()
    pending = []
    for vector, op in ((sums, tdist.ReduceOp.SUM), (mins, tdist.ReduceOp.MIN)):
        if vector.numel():
            moved = _on_device(vector)
            pending.append((vector, moved, tdist.all_reduce(moved, op=op, async_op=True)))
    for vector, moved, work in pending:
        _wait(work, what)
        vector.copy_(moved.cpu())


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


@dataclass(frozen=True)
class GradPart:
    """This rank's part of one parameter's gradient.

    Attributes:
        name: the parameter's qualified name as ``named_parameters`` gives it
            (FSDP1: the FSDP unit's name joined with the original name).
        grad: the local part (a plain tensor), or None when this rank holds none.
        sharded: True when the ranks hold different parts (FSDP): the full
            norm is the square root of the summed squares of the parts; False
            when every rank holds the whole gradient (DDP after all-reduce).
    """

    name: str
    grad: torch.Tensor | None
    sharded: bool


def grad_parts(model: nn.Module) -> list[GradPart]:
    """The gradient of every trainable parameter as this rank holds it, in a rank-independent order.

    Read after the backward (and after DDP's all-reduce or FSDP's
    reduce-scatter): DDP gives whole gradients, FSDP2 ``DTensor`` shards,
    FSDP1 the flat gradient cut back into the original parameters.
    """
    parts: list[GradPart] = []
    covered: set[int] = set()
    for unit_name, module in model.named_modules():
        flat = _flat_param(module)
        if flat is None or id(flat) in covered:
            continue
        covered.add(id(flat))
        covered.update(id(p) for p in (getattr(flat, "_params", None) or ()))
        parts.extend(_flat_parts(unit_name, flat))
    for name, param in model.named_parameters():
        if id(param) in covered or not param.requires_grad:
            continue
        grad = param.grad
        local = None if grad is None else local_tensor(grad)
        parts.append(GradPart(name, local, grad is not None and is_sharded(grad)))
    return parts


def _flat_param(module: nn.Module) -> Any:
    handle = getattr(module, "_handle", None)
    return getattr(handle, "flat_param", None)


def _flat_parts(unit_name: str, flat: Any) -> Iterable[GradPart]:
    grad = flat.grad
    sharded = _flat_is_sharded(flat)
    prefix = f"{unit_name}." if unit_name else ""
    for fqn, info in zip(flat._fqns, flat._shard_param_infos, strict=True):
        part = None
        if grad is not None and info.in_shard:
            part = grad.detach()[info.offset_in_shard : info.offset_in_shard + info.numel_in_shard]
        yield GradPart(prefix + fqn, part, sharded)


def _flat_is_sharded(flat: Any) -> bool:
    return any(not info.in_shard for info in flat._shard_param_infos) or bool(
        sum(info.numel_in_shard or 0 for info in flat._shard_param_infos) < sum(flat._numels)
    )


def full_numels(model: nn.Module) -> dict[int, int]:
    """``id(param) -> element count of the whole parameter`` where a rank holds only a shard.

    FSDP1 flat parameters map to the sum of their original parameters (no
    padding, shared parameters once); with ``use_orig_params=True`` each
    original parameter maps to its unsharded size. ``DTensor`` parameters
    (FSDP2) already report their global size and are not listed.
    """
    out: dict[int, int] = {}
    for module in model.modules():
        flat = _flat_param(module)
        if flat is None:
            continue
        out[id(flat)] = int(sum(flat._numels))
        for param, numel in zip(getattr(flat, "_params", None) or (), flat._numels, strict=False):
            out[id(param)] = int(numel)
    return out
