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
* Collectives are entered by every rank of the default group. They are
  started without waiting (`start_reduce`), and each is waited on with a
  timeout (`collective_timeout`, seconds, from
  ``$HOOKSCOPE_COLLECTIVE_TIMEOUT``, default 300): a rank that waits longer
  raises `DistributedError` naming the call and the ranks that never got
  there (a rank that has to wait notes it in the process group's store,
  `_note`; one that finds its collectives done writes nothing), instead of
  hanging until the process group's own timeout (30 minutes by default) or
  forever. Calls that run a wrapped model (the doctor) first meet
  in the store (`rendezvous`): a rank left alone fails before any
  collective, and the process group stays usable.
* Sharded tensors (``DTensor``, FSDP1 flat parameters) need no
  ``torch.distributed`` import and live in `hookscope.shards`.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.errors import DistributedError

_DEFAULT_TIMEOUT = 300.0


@functools.cache
def _dist() -> Any:
    """``torch.distributed`` when this build has it, else None (looked up once: a Monitor asks every step)."""
    import torch.distributed as tdist

    return tdist if tdist.is_available() else None


def initialized() -> bool:
    """True when a default process group exists."""
    tdist = _dist()
    return bool(tdist is not None and tdist.is_initialized())


def rank() -> int:
    """This process's global rank (0 outside torch.distributed)."""
    return where()[0]


def world_size() -> int:
    """The number of ranks (1 outside torch.distributed)."""
    return where()[1]


def where() -> tuple[int, int]:
    """`rank` and `world_size` together (one look at the process group)."""
    if initialized():
        tdist = _dist()
        return int(tdist.get_rank()), int(tdist.get_world_size())
    return _env_int("RANK", 0), _env_int("WORLD_SIZE", 1)


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


#: How often this process has called each guarded ``what`` (`rendezvous`, `start_reduce`).
_CALLS: dict[str, int] = {}


def _store() -> Any:
    """The default process group's key-value store (a TCP server on rank 0 under torchrun)."""
    return _dist().distributed_c10d._get_default_store()


def rendezvous(what: str, why: str) -> None:
    """Wait until every rank has called ``what``, through the store: no collective.

    Call it before code whose collectives only some ranks might enter (the
    doctor on a DDP/FSDP model). Keys ``hookscope/<what>/<n>/<rank>``, one
    per rank and call; a rank that waits longer than `collective_timeout`
    raises naming the ranks that never came and withdraws its own key; the
    process group stays usable, since nobody entered a collective.

    Raises:
        DistributedError: some ranks did not call ``what`` in time.
    """
    if not initialized() or world_size() == 1:
        return
    seq = _CALLS[what] = _CALLS.get(what, 0) + 1
    store, timeout = _store(), collective_timeout()
    keys = [f"hookscope/{what}/{seq}/{r}" for r in range(world_size())]
    store.set(keys[rank()], "1")
    try:
        store.wait(keys, datetime.timedelta(seconds=timeout))
    except RuntimeError:
        missing = [r for r, key in enumerate(keys) if not store.check([key])]
        store.delete_key(keys[rank()])  # withdrawn: a later call on every rank meets again
        _CALLS[what] = seq - 1
        raise DistributedError(
            f"rank {rank()}: {what} is a collective here ({why}), and rank(s) "
            f"{_ranges(missing)} did not call it within {timeout:g} s. Call it on every rank "
            "(or on the unwrapped model on one rank); HOOKSCOPE_COLLECTIVE_TIMEOUT sets the wait"
        ) from None


def _note(what: str, seq: int) -> None:
    """Note in the store that this rank waits for call #``seq`` of ``what`` (one write).

    Written only when a rank has to wait (`Reducing.wait`): a step whose
    all-reduces finished while the training went on costs no store round trip.
    If the wait then times out, `_behind` names the ranks that never got there.
    """
    with contextlib.suppress(RuntimeError):  # the store is gone with rank 0: the timeout says it
        _store().set(f"hookscope/{what}/{rank()}", str(seq))


def _behind(what: str, seq: int) -> str:
    """Which ranks have not waited for call #``seq`` of ``what`` (from `_note`)."""
    try:
        store = _store()
        keys = [f"hookscope/{what}/{r}" for r in range(world_size())]
        present = [key for key in keys if store.check([key])]
        seen = dict(zip(present, store.multi_get(present), strict=True))
    except RuntimeError:
        return ""  # the store is gone with rank 0
    late = {r: int(seen[key]) if key in seen else 0 for r, key in enumerate(keys)}
    missing = [r for r, done in late.items() if done < seq and r != rank()]
    return f"; rank(s) {_ranges(missing)} never reached call #{seq}" if missing else ""


def _ranges(ranks: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"`` (a short list at any world size)."""
    parts: list[str] = []
    for r in ranks:
        if parts and parts[-1].split("-")[-1] == str(r - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{r}"
        else:
            parts.append(str(r))
    return ", ".join(parts)


def gathers_parameters(model: nn.Module) -> bool:
    """True when ``model`` holds FSDP (1 or 2) modules: its forward all-gathers parameter shards."""
    return _fsdp_module(model) is not None


def _fsdp_module(model: nn.Module) -> nn.Module | None:
    fsdp = sys.modules.get("torch.distributed.fsdp")
    if fsdp is None or not initialized():  # FSDP needs a process group
        return None
    sharded = tuple(getattr(fsdp, name) for name in ("FullyShardedDataParallel", "FSDPModule"))
    return next((module for module in model.modules() if isinstance(module, sharded)), None)


def collective_reason(model: nn.Module, backward: bool) -> str | None:
    """Why running ``model`` (forward, and backward if asked) enters collectives, or None.

    FSDP (1 and 2) all-gathers parameters in the forward; DDP all-reduces
    gradients in the backward and broadcasts buffers in the forward.
    """
    if not initialized() or world_size() == 1:
        return None
    sharded = _fsdp_module(model)
    if sharded is not None:
        return f"{type(sharded).__name__} all-gathers parameters in the forward"
    ddp = sys.modules.get("torch.nn.parallel.distributed")
    for module in model.modules():
        if ddp is not None and isinstance(module, ddp.DistributedDataParallel):
            if backward:
                return "DistributedDataParallel all-reduces gradients in the backward"
            if module.broadcast_buffers and any(True for _ in module.buffers()):
                return "DistributedDataParallel broadcasts buffers in the forward"
    return None


def _wait(work: Any, what: str, seq: int) -> None:
    timeout = collective_timeout()
    start = time.monotonic()
    try:
        done = work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as exc:
        done = False
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    else:
        reason = "timed out"
    if done is not False:
        return
    waited = time.monotonic() - start
    behind = _behind(what, seq) if seq else ""
    if waited < 0.9 * timeout:  # not a timeout: the group broke (a rank exited or was killed)
        raise DistributedError(
            f"rank {rank()}: {what} failed after {waited:.1f} s of waiting for the other ranks "
            f"({reason}{behind}): a rank has probably exited or lost its connection. It is a "
            "collective: every rank must call it, the same number of times"
        )
    raise DistributedError(
        f"rank {rank()}: {what} waited {timeout:g} s for the other ranks ({reason}{behind}). "
        "It is a collective: every rank must call it, the same number of times "
        "(set HOOKSCOPE_COLLECTIVE_TIMEOUT to wait longer)"
    )


def _on_device(vector: torch.Tensor) -> torch.Tensor:
    """NCCL reduces device tensors only; gloo takes CPU tensors."""
    backend = str(_dist().get_backend())
    if "nccl" in backend and torch.cuda.is_available():
        return vector.to(torch.device("cuda", torch.cuda.current_device()))
    return vector


class Reducing:
    """A SUM and a MAX all-reduce in flight (`start_reduce`); `wait` completes them in place."""

    def __init__(self, pending: list[tuple[torch.Tensor, torch.Tensor, Any]], what: str) -> None:
        self._pending = pending
        self.what = what
        self.seq = _CALLS[what] = _CALLS.get(what, 0) + 1

    def wait(self) -> None:
        """Wait (at most `collective_timeout` s each) and copy the results back (idempotent).

        Raises:
            DistributedError: the other ranks did not enter the collectives in time.
        """
        pending, self._pending = self._pending, []
        if pending and not all(work.is_completed() for _, _, work in pending):
            _note(self.what, self.seq)
        for vector, moved, work in pending:
            _wait(work, self.what, self.seq)
            if moved is not vector:
                vector.copy_(moved.cpu())


def start_reduce(sums: torch.Tensor, maxes: torch.Tensor, what: str) -> Reducing:
    """Start a SUM all-reduce of ``sums`` and a MAX of ``maxes`` (float64, CPU); no wait.

    Both run while the caller goes on; `Reducing.wait` completes them in
    place. An empty vector is skipped. Every rank must start them in the same
    order relative to its other collectives (DDP's, FSDP's).
    """
    tdist = _dist()
    pending = []
    for vector, op in ((sums, tdist.ReduceOp.SUM), (maxes, tdist.ReduceOp.MAX)):
        if vector.numel():
            moved = _on_device(vector)
            pending.append((vector, moved, tdist.all_reduce(moved, op=op, async_op=True)))
    return Reducing(pending, what)


def reduce_vectors(sums: torch.Tensor, maxes: torch.Tensor, what: str) -> None:
    """SUM-reduce ``sums`` and MAX-reduce ``maxes`` across ranks, in place, and wait.

    Raises:
        DistributedError: the other ranks did not enter the collectives in time.
    """
    start_reduce(sums, maxes, what).wait()


def gather_objects(obj: object, what: str) -> list[object]:
    """``obj`` of every rank, by rank (two all-gathers, each waited on with the timeout).

    Its cost grows with the world size: hookscope calls it only when the
    ranks' sets of monitored tensors differ (`hookscope.monitor.ranks`).
    """
    tdist = _dist()
    data = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8).clone()
    size = _on_device(torch.tensor([data.numel()], dtype=torch.int64))
    sizes = [torch.zeros_like(size) for _ in range(world_size())]
    _wait(tdist.all_gather(sizes, size, async_op=True), what, 0)
    counts = [int(s.item()) for s in sizes]
    padded = _on_device(torch.zeros(max(counts), dtype=torch.uint8))
    padded[: data.numel()] = data.to(padded.device)
    parts = [torch.empty_like(padded) for _ in counts]
    _wait(tdist.all_gather(parts, padded, async_op=True), what, 0)
    return [
        pickle.loads(part[:n].cpu().numpy().tobytes())
        for part, n in zip(parts, counts, strict=True)
    ]
