"""Monitor statistics across ranks: ``ranks="reduce"`` and ``grads="reduced"``.

``ranks="reduce"``: at `Monitor.step` the merged reductions of every rank are
combined as if all ranks' tensors were one tensor: element counts, sums, sums
of squares and the zero / NaN / Inf counts by SUM, min and max by MAX (min
negated) — exact global statistics, not means of means. That is two
all-reduces of float64 vectors per step whatever the world size: 6 numbers
per tensor by SUM; by MAX 2 per tensor and a header (`hookscope.dist.signature`)
that checks every rank packed the same tensors and finds the first NaN/Inf.
The vectors are packed in the order the ranks agreed on at the last step; the
first step, and a step whose tensors changed on every rank, first agree on
the new order (one more all-reduce); plus one broadcast on the one step a
NaN/Inf first shows. When the ranks hold different sets of tensors (code that
runs on some ranks only), that step keeps each rank's own statistics and a
warning says so once. Each step's entry is noted in the store
(`hookscope.dist.enter`), so a rank that waits in vain names the missing ones.

``grads="reduced"``: parameter gradients are read once per backward, after
it has finished — after DDP's all-reduce and FSDP's reduce-scatter, whose
completion callbacks are queued earlier — so they are the gradients the
optimizer sees. Under DDP every rank holds the same gradient; under FSDP each
holds a shard, and the full norm comes from summing the shards' squares over
the ranks (with ``ranks="local"`` a SUM and a MAX of their own; ``"reduce"``
folds them into its vectors). Under HSDP a shard held by ``R`` ranks of the
replicate dimension enters the SUM with weight ``1 / R``.

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
_WHAT = "Monitor.step()"


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
        #: Sharded parameter gradients: name -> ranks holding each part (`shards.GradPart`).
        self.sharded: dict[str, int] = {}
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
                self.sharded[part.name] = part.replicas


class RankCombiner:
    """Combines a step's merged reductions across ranks (see the module docstring)."""

    def __init__(self, ranks: Ranks, reader: GradReader | None) -> None:
        self.ranks = ranks
        self.reader = reader
        self._warned = False
        #: The keys every rank held at the last combined step, in packing order.
        self._layout: list[Key] | None = None

    def combine(self, merged: dict[Key, Reduction], first: NonFinite | None) -> NonFinite | None:
        """Combine ``merged`` in place; return this step's first NaN/Inf, with its rank.

        Args:
            merged: the step's reductions after `fetch`, by ``(phase, module, tensor)``.
            first: this rank's first non-finite tensor of the step, if any
                (pass None once a first one is known).
        """
        local = None if first is None else dataclasses.replace(first, rank=dist.rank())
        if not dist.initialized() or dist.world_size() == 1:
            return local
        if self.ranks == "local":
            if self.reader is not None and self.reader.sharded:
                keys = [k for k in merged if k[0] == "param" and k[1] in self.reader.sharded]
                dist.enter(_WHAT)
                if not self._exchange(keys, merged, math.inf, extrema=False)[0]:
                    self._warn("parameter gradients")
            return local
        world = dist.world_size()
        code = math.inf if first is None else _PHASES[first.phase] * world + dist.rank()
        dist.enter(_WHAT)
        keys = [key for key in merged if not self._replicated(key)]
        same, lowest = self._exchange(keys, merged, code, extrema=True)
        if not same:
            self._warn("tensors")
        if math.isinf(lowest):
            return None
        src = int(lowest) % world
        found = dist.broadcast(first, src, _WHAT)
        assert isinstance(found, NonFinite)
        return dataclasses.replace(found, rank=src)

    def _replicas(self, key: Key) -> int:
        """Ranks that hold the same tensor ``key`` (HSDP shards); 1 for everything else."""
        if self.reader is None or key[0] != "param":
            return 1
        return self.reader.sharded.get(key[1], 1)

    def _replicated(self, key: Key) -> bool:
        """A reduced parameter gradient every rank holds whole (DDP): nothing to combine."""
        return self.reader is not None and key[0] == "param" and key[1] not in self.reader.sharded

    def _exchange(
        self, keys: list[Key], merged: dict[Key, Reduction], code: float, *, extrema: bool
    ) -> tuple[bool, float]:
        """Combine ``merged[keys]`` over the ranks: one SUM and one MAX all-reduce.

        The vectors are packed in the layout every rank agreed on at the last
        step, with each rank's key signature in the MAX vector; a step whose
        keys differ from it first agrees on the new keys (one more MAX).
        Returns whether the ranks held the same keys (if not, ``merged`` keeps
        this rank's values) and the smallest ``code`` over the ranks.
        """
        layout = self._layout
        if layout is None:
            same, lowest = dist.agree(keys, code, _WHAT)
            if not same:
                return False, lowest
            layout = keys
        reds = [merged.get(key) for key in layout]
        sums = _pack_sums(reds, [self._replicas(key) for key in layout])
        header = dist.signature(keys, code)
        maxes = torch.tensor(header + (_pack_maxes(reds) if extrema else []), dtype=torch.float64)
        dist.reduce_vectors(sums, maxes, _WHAT)
        same, lowest = dist.agreed(maxes[: dist.SIGNATURE].tolist())
        if not same or layout != keys:
            self._layout = None
            if same:  # every rank moved to the same new set of tensors: agree on it now
                return self._exchange(keys, merged, code, extrema=extrema)
            return False, lowest
        self._layout = layout
        _unpack(layout, merged, sums, maxes[dist.SIGNATURE :] if extrema else None)
        return True, lowest

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


def _pack_sums(reds: Sequence[Reduction | None], replicas: Sequence[int]) -> torch.Tensor:
    """Per tensor: element count, sum, sum of squares, zero, NaN and Inf counts (zeros if absent).

    A tensor that ``n`` ranks hold alike (an HSDP shard) enters with weight
    ``1 / n``, so the SUM over all ranks counts it once.
    """
    rows = []
    for red, copies in zip(reds, replicas, strict=True):
        if red is None:
            rows.append([0.0] * (1 + len(_SUMMED)))
            continue
        unshift(red)  # shifted moments do not add across ranks
        squares = _sumsq(red)
        values = [red.sum, squares, red.nonzero, red.nan, red.inf]
        row = [float(red.numel)] + [float(v) if isinstance(v, float) else 0.0 for v in values]
        rows.append([value / copies for value in row])
    return torch.tensor(rows, dtype=torch.float64).reshape(-1)


def _pack_maxes(reds: Sequence[Reduction | None]) -> list[float]:
    """Per tensor: minus the minimum and the maximum, for a MAX all-reduce (-inf if absent)."""
    out: list[float] = []
    for red in reds:
        if red is None:
            out += [-math.inf, -math.inf]
        else:
            out += [-_extreme(red.min, math.inf), _extreme(red.max, -math.inf)]
    return out


def _extreme(value: object, default: float) -> float:
    return value if isinstance(value, float) and not math.isnan(value) else default


def _unpack(
    keys: Sequence[Key],
    merged: dict[Key, Reduction],
    sums: torch.Tensor,
    maxes: torch.Tensor | None,
) -> None:
    summed = sums.view(-1, 1 + len(_SUMMED)).tolist()
    extrema = None if maxes is None else maxes.view(-1, 2).tolist()
    for index, key in enumerate(keys):
        red = merged[key]
        values = summed[index]
        empty = red.numel == 0  # this rank held none of it: take what the others had
        red.numel = round(values[0])
        if red.sumsq is None and isinstance(red.norm, float):
            red.norm = None
            red.sumsq = 0.0
        for name, value in zip(_SUMMED, values[1:], strict=True):
            if isinstance(getattr(red, name), float) or (empty and name in _GRAD_FIELDS):
                setattr(red, name, value)
        if extrema is not None and isinstance(red.min, float):
            red.min, red.max = -extrema[index][0], extrema[index][1]
