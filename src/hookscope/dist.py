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
* Sharded tensors (``DTensor``, FSDP1 flat parameters) need no
  ``torch.distributed`` import and live in `hookscope.shards`.
"""

from __future__ import annotations

import datetime
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import torch

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
