"""Monitor statistics across ranks: ``ranks="reduce"`` and ``grads="reduced"``.

``ranks="reduce"``: at `Monitor.step` the merged reductions of every rank are
combined as if all ranks' tensors were one tensor: element counts, sums, sums
of squares and the zero / NaN / Inf counts by SUM, min and max by MIN (max
negated) — exact global statistics, not means of means. That is three
all-reduces of float64 vectors per step whatever the world size (a header
that checks every rank holds the same tensors and finds the first NaN/Inf,
6 numbers per reported tensor by SUM, 2 by MIN), plus one broadcast on the
one step a NaN/Inf first shows. When the ranks hold different sets of tensors
(code that runs on some ranks only), that step keeps each rank's own
statistics and a warning says so once.

``grads="reduced"``: parameter gradients are read once per backward, after
it has finished — after DDP's all-reduce and FSDP's reduce-scatter, whose
completion callbacks are queued earlier — so they are the gradients the
optimizer sees. Under DDP every rank holds the same gradient; under FSDP each
holds a shard, and the full norm comes from one SUM all-reduce of the shards'
squares (with ``ranks="local"``; ``"reduce"`` folds it into its own vector).

``first_nonfinite`` carries the rank that saw it. With ``"reduce"`` every
rank agrees on it: the earliest phase (forward before backward before
parameter gradients) at the earliest step, the lowest rank on a tie.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from hookscope import dist, shards
from hookscope.errors import HookscopeWarning
from hookscope.monitor.collector import GRAD_PLAN, Collector, Entry
from hookscope.monitor.records import NonFinite
from hookscope.monitor.results import Key
from hookscope.stats import Reduction, reduce_tensor, unshift

Ranks = Literal["local", "reduce"]
Grads = Literal["local", "reduced"]

_SUMMED = ("sum", "sumsq", "nonzero", "nan", "inf")
_GRAD_FIELDS = ("sumsq", "nan", "inf")
_PHASES = {"forward": 0, "backward": 1, "param": 2}


class GradReader:
    """``grads="reduced"``: reads every parameter gradient once, when a backward has finished.

    `schedule` is called from the monitor's gradient hooks; it queues an
    autograd completion callback that queues a second one, so the read runs
    after the callbacks DDP and FSDP queued during the backward.
    """

    def __init__(self, model: nn.Module, collector: Collector, on_error: str = "warn") -> None:
        self.model = model
        self.collector = collector
        self.on_error = on_error
        self.sharded: set[str] = set()
        self._task = -2
        self._failed = False

    def schedule(self) -> None:
        """Queue the read for the end of the running backward (once per backward)."""
        task = int(torch._C._current_graph_task_id())
        if task == self._task or task == -1:
            return
        self._task = task
        engine = torch.autograd.Variable._execution_engine
        engine.queue_callback(lambda: engine.queue_callback(self._read))

    def _read(self) -> None:
        """Runs inside autograd's completion callbacks: an error here would fail the backward."""
        self._task = -2
        if not self.collector.recording or self._failed:
            return
        try:
            self._read_parts()
        except Exception as exc:
            if self.on_error == "raise":
                raise
            self._failed = True
            warnings.warn(
                f"hookscope Monitor: reading reduced parameter gradients failed "
                f"({type(exc).__name__}: {exc}); grads='reduced' records stop here",
                HookscopeWarning,
                stacklevel=2,
            )

    def _read_parts(self) -> None:
        for part in shards.grad_parts(self.model):
            grad = part.grad
            red = Reduction("float", 0) if grad is None else reduce_tensor(grad, GRAD_PLAN)
            shape: tuple[int, ...] = (0,)
            dtype = torch.float32
            if grad is not None:
                shape, dtype = tuple(grad.shape), grad.dtype
            self.collector.entries.append(
                Entry("param", [(part.name, "grad", True)], red, shape, dtype)
            )
            if part.sharded:
                self.sharded.add(part.name)


class RankCombiner:
    """Combines a step's merged reductions across ranks (see the module docstring)."""

    def __init__(self, ranks: Ranks, reader: GradReader | None) -> None:
        self.ranks = ranks
        self.reader = reader
        self._warned = False

    def combine(self, merged: dict[Key, Reduction], first: NonFinite | None) -> NonFinite | None:
        """Combine ``merged`` in place; return this step's first NaN/Inf, with its rank.

        Args:
            merged: the step's reductions after `fetch`, by ``(phase, module, tensor)``.
            first: this rank's first non-finite tensor of the step, if any
                (pass None once a first one is known).
        """
        if not dist.initialized() or dist.world_size() == 1:
            return None if first is None else dataclasses.replace(first, rank=dist.rank())
        if self.ranks == "local":
            self._sum_shards(merged)
            return None if first is None else dataclasses.replace(first, rank=dist.rank())
        return self._reduce(merged, first)

    def _replicated(self, key: Key) -> bool:
        """A reduced parameter gradient every rank holds whole (DDP): nothing to combine."""
        return self.reader is not None and key[0] == "param" and key[1] not in self.reader.sharded

    def _sum_shards(self, merged: dict[Key, Reduction]) -> None:
        if self.reader is None or not self.reader.sharded:
            return
        keys = [key for key in merged if key[0] == "param" and key[1] in self.reader.sharded]
        same, _ = dist.agree(keys, math.inf, "Monitor.step() (grads='reduced')")
        if not same:
            self._warn("parameter gradients")
            return
        sums = _pack_sums([merged[key] for key in keys])
        dist.reduce_vectors(sums, torch.empty(0, dtype=torch.float64), "Monitor.step()")
        _unpack(keys, merged, sums, None)

    def _reduce(self, merged: dict[Key, Reduction], first: NonFinite | None) -> NonFinite | None:
        keys = [key for key in merged if not self._replicated(key)]
        world = dist.world_size()
        code = math.inf if first is None else _PHASES[first.phase] * world + dist.rank()
        same, lowest = dist.agree(keys, code, "Monitor.step() (ranks='reduce')")
        if same:
            reds = [merged[key] for key in keys]
            sums, mins = _pack_sums(reds), _pack_mins(reds)
            dist.reduce_vectors(sums, mins, "Monitor.step() (ranks='reduce')")
            _unpack(keys, merged, sums, mins)
        else:
            self._warn("tensors")
        if math.isinf(lowest):
            return None
        src = int(lowest) % world
        found = dist.broadcast(first, src, "Monitor.step() (ranks='reduce')")
        assert isinstance(found, NonFinite)
        return dataclasses.replace(found, rank=src)

    def _warn(self, what: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"hookscope Monitor: the ranks reported different {what} at one step "
                "(rank-dependent code); such steps keep each rank's own statistics",
                HookscopeWarning,
                stacklevel=4,
            )


def _sumsq(red: Reduction) -> float | None:
    if isinstance(red.sumsq, float):
        return red.sumsq
    return red.norm * red.norm if isinstance(red.norm, float) else None


def _pack_sums(reds: Sequence[Reduction]) -> torch.Tensor:
    rows = []
    for red in reds:
        unshift(red)  # shifted moments do not add across ranks
        squares = _sumsq(red)
        values = [red.sum, squares, red.nonzero, red.nan, red.inf]
        rows.append(
            [float(red.numel)] + [float(v) if isinstance(v, float) else 0.0 for v in values]
        )
    return torch.tensor(rows, dtype=torch.float64).reshape(-1)


def _pack_mins(reds: Sequence[Reduction]) -> torch.Tensor:
    rows = []
    for red in reds:
        low = red.min if isinstance(red.min, float) and not math.isnan(red.min) else math.inf
        high = red.max if isinstance(red.max, float) and not math.isnan(red.max) else -math.inf
        rows.append([low, -high])
    return torch.tensor(rows, dtype=torch.float64).reshape(-1)


def _unpack(
    keys: Sequence[Key],
    merged: dict[Key, Reduction],
    sums: torch.Tensor,
    mins: torch.Tensor | None,
) -> None:
    summed = sums.view(-1, 1 + len(_SUMMED)).tolist()
    extrema = None if mins is None else mins.view(-1, 2).tolist()
    for index, key in enumerate(keys):
        red = merged[key]
        values = summed[index]
        empty = red.numel == 0  # this rank held none of it: take what the others had
        red.numel = int(values[0])
        if red.sumsq is None and isinstance(red.norm, float):
            red.norm = None
            red.sumsq = 0.0
        for name, value in zip(_SUMMED, values[1:], strict=True):
            if isinstance(getattr(red, name), float) or (empty and name in _GRAD_FIELDS):
                setattr(red, name, value)
        if extrema is not None and isinstance(red.min, float):
            red.min, red.max = extrema[index][0], -extrema[index][1]
