"""Monitor statistics across ranks: ``ranks="reduce"`` and ``grads="reduced"``.

``ranks="reduce"``: at `Monitor.step` the merged reductions of every rank are
combined as if all ranks' tensors were one tensor: element counts, sums,
sums of squares and the zero / NaN / Inf counts by SUM, min and max by MAX
(min negated) — exact global statistics, not means of means. That is two
all-reduces of float64 vectors per step whatever the world size
(`hookscope.monitor.packing`): 6 numbers per tensor by SUM; by MAX 2 per
tensor, a header (the step number, so ranks out of step fail loudly, and
whether a rank held tensors outside the layout) and, until the first NaN/Inf
is found, the slots that carry its location.

The two all-reduces are started by ``step()`` and not waited for there
(`Exchange`): they run during the next step's forward and backward, and the
step's results are completed when first read, or at the next ``step()`` or
``close()``, whichever comes first. Completing one only waits: it never
starts a collective, so reading a result on some ranks only is safe.

The vectors are packed in a layout the ranks agreed on: at the first step
the tensors of every rank (one MAX checks that all ranks hold the same ones;
only if not, the key lists are gathered). A tensor held by only some ranks
is packed as zeros elsewhere, so rank-dependent code still gets exact
statistics. A tensor first seen after that (an eval-only layer) keeps this
rank's own statistics at that one step (a warning says so once); the header
tells every rank, and the next step first extends the layout (a gather of
the new keys: every rank does it at the same point).

``grads="reduced"``: parameter gradients are read once per backward, after
it has finished — after DDP's all-reduce and FSDP's reduce-scatter, whose
completion callbacks are queued earlier — so they are the gradients the
optimizer sees. Under DDP every rank holds the same gradient; under FSDP each
holds a shard, and the full norm comes from summing the shards' squares over
the ranks (with ``ranks="local"`` a SUM and a MAX of their own, waited on at
once; ``"reduce"`` folds them into its vectors). Under HSDP a shard held by
``R`` ranks of the replicate dimension enters the SUM with weight ``1 / R``.

``first_nonfinite`` carries the rank that saw it. With ``"reduce"`` every
rank agrees on it: the earliest phase (forward before backward before
parameter gradients) at the earliest step, the lowest rank on a tie.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
import zlib
from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from hookscope import dist, shards
from hookscope.errors import DistributedError, HookscopeWarning
from hookscope.monitor import packing
from hookscope.monitor.collector import GRAD_PLAN, Collector
from hookscope.monitor.entries import Entry
from hookscope.monitor.records import NonFinite, Phase
from hookscope.monitor.results import Key
from hookscope.stats import Reduction, check_tensor, reduce_tensor

Ranks = Literal["local", "reduce"]
Grads = Literal["local", "reduced"]

_PHASES: tuple[Phase, ...] = ("forward", "backward", "param")
_HEADER = 3  # step number, minus it, tensors outside the layout
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
            if grad is None:
                red = Reduction("float", 0)
            else:
                checking = self.collector.checking  # an unrecorded step: NaN/Inf counts only
                red = check_tensor(grad) if checking else reduce_tensor(grad, GRAD_PLAN)
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
    """Combines a step's merged reductions across ranks (see the module docstring).

    Args:
        ranks: the monitor's ``ranks`` option.
        reader: the reduced-gradient reader (``grads="reduced"``), if any.
        model: the monitored model: its longest name sizes the room for a
            NaN/Inf location, the same on every rank.
    """

    def __init__(self, ranks: Ranks, reader: GradReader | None, model: nn.Module) -> None:
        self.ranks = ranks
        self.reader = reader
        self.model = model
        self._slots: int | None = None
        self._warned = False
        #: The keys the ranks agreed on, in packing order, and their positions.
        self._layout: list[Key] | None = None
        self._index: dict[Key, int] = {}
        #: Keys this rank held outside the layout, for the next extension.
        self._outside: list[Key] = []
        #: Some rank held keys outside the layout at the last step: extend first.
        self.grow = False

    def start(
        self, step: int, merged: dict[Key, Reduction], first: NonFinite | None, searching: bool
    ) -> Exchange:
        """Start combining ``merged`` over the ranks; `Exchange.finish` completes it.

        Args:
            step: the step's number.
            merged: the step's reductions after `fetch`, by ``(phase, module, tensor)``.
            first: this rank's first non-finite tensor of the step, if any.
            searching: no first NaN/Inf is known yet (the same on every rank).
        """
        local = None if first is None else dataclasses.replace(first, rank=dist.rank())
        if not dist.initialized() or dist.world_size() == 1:
            return Exchange(self, local, step)
        if self.ranks == "local":
            sharded = {} if self.reader is None else self.reader.sharded
            keys = [k for k in merged if k[0] == "param" and k[1] in sharded]
            if not sharded:
                return Exchange(self, local, step)
        else:
            keys = [key for key in merged if not self._replicated(key)]
        if self._layout is None or self.grow:
            self._extend(keys)
        assert self._layout is not None
        outside = [key for key in keys if key not in self._index]
        self._outside += [key for key in outside if key not in self._outside]
        reds = [merged.get(key) for key in self._layout]
        header = [float(step), -float(step), float(len(outside))]
        extrema = self.ranks == "reduce"
        slots = self.slots() if extrema and searching else 0
        if slots:
            code, text = math.inf, ""
            if first is not None:
                code = _PHASES.index(first.phase) * dist.world_size() + dist.rank()
                text = f"{first.module}\0{first.tensor}"
            header += packing.encode_first(code, text, slots)
        replicas = [self._replicas(key) for key in self._layout]
        sums, maxes = packing.pack(reds, replicas, header, extrema)
        running = dist.start_reduce(sums, maxes, _WHAT)
        return Exchange(
            self,
            local,
            step,
            merged,
            list(self._layout),
            sums,
            maxes,
            running,
            slots,
            bool(outside),
        )

    def slots(self) -> int:
        """MAX slots for a NaN/Inf location: the longest module or parameter name, a path."""
        if self._slots is None:
            names = [*dict(self.model.named_modules()), *dict(self.model.named_parameters())]
            longest = max((len(name.encode()) for name in names), default=0)
            self._slots = packing.text_slots(longest + 1 + 64)
        return self._slots

    def _extend(self, keys: list[Key]) -> None:
        """Agree on the layout: at the first step, every rank's keys; later, the keys it lacked.

        Every rank calls this at the same step (the first, or the one after a
        step whose header showed keys outside the layout).
        """
        if self._layout is None:
            self._layout = []
            crc = float(zlib.crc32(repr(keys).encode()))
            check = torch.tensor([len(keys), crc, -len(keys), -crc], dtype=torch.float64)
            dist.reduce_vectors(torch.empty(0, dtype=torch.float64), check, _WHAT)
            if check[0] == -check[2] and check[1] == -check[3]:  # the same keys everywhere
                self._add(keys)
                return
        mine = [key for key in [*self._outside, *keys] if key not in self._index]
        for theirs in dist.gather_objects(mine, _WHAT):
            assert isinstance(theirs, list)
            self._add(theirs)
        self._outside, self.grow = [], False

    def _add(self, keys: Sequence[Key]) -> None:
        assert self._layout is not None
        for key in keys:
            if key not in self._index:
                self._index[key] = len(self._layout)
                self._layout.append(key)

    def _replicas(self, key: Key) -> int:
        """Ranks that hold the same tensor ``key`` (HSDP shards); 1 for everything else."""
        if self.reader is None or key[0] != "param":
            return 1
        return self.reader.sharded.get(key[1], 1)

    def _replicated(self, key: Key) -> bool:
        """A reduced parameter gradient every rank holds whole (DDP): nothing to combine."""
        return self.reader is not None and key[0] == "param" and key[1] not in self.reader.sharded

    def warn_outside(self) -> None:
        """Say once that a step kept local statistics for tensors new to the layout."""
        if not self._warned:
            self._warned = True
            warnings.warn(
                "hookscope Monitor: a tensor first seen after the first step (a layer that "
                "had not run before) keeps each rank's own statistics at that step; later "
                "steps combine it across ranks",
                HookscopeWarning,
                stacklevel=5,
            )


@dataclasses.dataclass(eq=False)
class Exchange:
    """One step's all-reduces in flight (`RankCombiner.start`); `finish` completes them.

    ``running`` is None when there is nothing to combine (no process group,
    or ``ranks="local"`` without sharded gradients): ``finish`` then returns
    this rank's own first NaN/Inf.
    """

    combiner: RankCombiner
    local: NonFinite | None
    step: int
    merged: dict[Key, Reduction] = dataclasses.field(default_factory=dict)
    layout: list[Key] = dataclasses.field(default_factory=list)
    sums: torch.Tensor | None = None
    maxes: torch.Tensor | None = None
    running: dist.Reducing | None = None
    #: MAX slots that carry the first NaN/Inf's location (0 once one is known).
    slots: int = 0
    #: This rank held tensors outside the layout (their statistics stay local).
    outside: bool = False

    @property
    def done(self) -> bool:
        """True when there is nothing to wait for."""
        return self.running is None

    def finish(self) -> NonFinite | None:
        """Wait, write the combined values into ``merged``; the step's first NaN/Inf and its rank.

        Only waits: never starts a collective. Call it once.

        Raises:
            DistributedError: the ranks are out of step, or the others never came.
        """
        if self.running is None:
            return self.local
        assert self.sums is not None and self.maxes is not None
        self.running.wait()
        maxes = self.maxes.tolist()
        header = maxes[:_HEADER]
        if header[0] != -header[1]:
            raise DistributedError(
                f"rank {dist.rank()}: {_WHAT} out of step: the ranks are at steps "
                f"{-header[1]:.0f} to {header[0]:.0f}. It is a collective: every rank must "
                "call it for the same steps, the same number of times"
            )
        combiner = self.combiner
        combiner.grow = combiner.grow or header[2] > 0
        if self.outside:
            combiner.warn_outside()
        if combiner.ranks == "local":
            packing.unpack(self.layout, self.merged, self.sums, None)
            return self.local
        extrema = _HEADER + self.slots
        packing.unpack(self.layout, self.merged, self.sums, maxes[extrema:])
        code, text = packing.decode_first(maxes[_HEADER:extrema])
        if math.isinf(code):
            return None
        world = dist.world_size()
        module, _, tensor = text.partition("\0")
        return NonFinite(self.step, _PHASES[int(code) // world], module, tensor, int(code) % world)
