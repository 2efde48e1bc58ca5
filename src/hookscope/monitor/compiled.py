"""What a `Monitor` does for compiled models: traced statistics and honest gaps.

* `TracedCollector` (`hookscope.monitor.traced`) takes the forward hook over
  while dynamo traces it.
* On open, a compiled model whose ``forward`` already has cached graphs
  (traced without the hooks) gets a `StaleGraphWarning` at once.
* Each step, `missing_phases` names the phases whose hooks did not run; the
  first such step warns (`hookscope.monitor.coverage`). With ``inputs=True``,
  a step in which a compiled graph ran misses ``"inputs"`` (eager-only), and
  the first one warns.

Names lose ``_orig_mod.`` where the Monitor cleans every name
(`hookscope.names`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from hookscope.hooks.compiled import warn_stale
from hookscope.hooks.selection import SelectedModule
from hookscope.monitor.coverage import (
    graphs_so_far,
    missing_phases,
    runs_stale_graphs,
    warn_inputs,
    warn_missing,
    warn_unsummarised,
)
from hookscope.monitor.entries import Entry
from hookscope.monitor.records import Missing, Phase
from hookscope.monitor.traced import TracedCollector
from hookscope.stats import Plan, cpuops


class CompiledSupport:
    """Per-Monitor state for compiled graphs; created by `Monitor.open`.

    Args:
        model: the monitored root module.
        selected: the monitored modules.
        plans: activation `Plan` per module name.
        inputs, outputs, grads, params: what the Monitor records (its options).
    """

    def __init__(
        self,
        model: nn.Module,
        selected: Sequence[SelectedModule],
        plans: dict[str, Plan],
        *,
        inputs: bool,
        outputs: bool,
        grads: bool,
        params: bool,
    ):
        warn_stale(model, "Monitor", stacklevel=5)
        self.model = model
        device = _device_of(model)
        self.traced = TracedCollector(
            [sel.name for sel in selected],
            plans,
            outputs=outputs,
            grads=grads,
            device=device,
        )
        if device.type == "cpu":
            cpuops.prepare()  # the row ops' C++ kernels, ready by the first compiled call
        trainable = any(p.requires_grad for p in model.parameters())
        expected: list[Phase] = []
        if outputs or inputs:
            expected.append("forward")
        if grads:
            expected.append("backward")
        if params and trainable:
            expected.append("param")
        self.expected = tuple(expected)
        self.inputs = inputs
        self._warned = self._warned_inputs = False
        self._unsummarised = [False]
        #: Graphs dynamo compiled before the Monitor was opened: when there were
        #: some, a step that records nothing may run one of them without hooks.
        self._graphs_at_open = graphs_so_far()
        self._stale: bool | None = None  # found out at the first empty step

    def check(self, step: int, entries: list[Entry]) -> tuple[Missing, ...]:
        """What ``step`` missed (`missing_phases`, and ``"inputs"``); the first time, a warning.

        Also warns once about complex tensors, summarised by magnitude (`warn_unsummarised`).

        ``inputs=True`` statistics are eager-only: when a compiled graph ran
        in the step, its modules' inputs were not reduced.
        """
        # not about compiling, but checked with the gaps: what the records do not say
        warn_unsummarised(step, entries, self._unsummarised)
        phases = missing_phases(entries, self.expected) or self._empty(entries)
        if phases and not self._warned:
            self._warned = True
            warn_missing(self.model, step, phases)
        if not (self.inputs and self.traced.ran):
            return phases
        if not self._warned_inputs:
            self._warned_inputs = True
            warn_inputs(self.model, step)
        missing: tuple[Missing, ...] = ("inputs", *phases)
        return missing

    def _empty(self, entries: list[Entry]) -> tuple[Phase, ...]:
        """``("forward",)`` for a step that recorded nothing through a stale compiled graph.

        An inference step through a graph compiled and run before the Monitor
        was opened records nothing at all, like a step in which the model did
        not run (an ``update_ratio`` snapshot step): only the first is
        reported, when the model is compiled (or held by a live
        ``torch.compile`` wrapper) and dynamo had compiled graphs at open.
        """
        if entries or "forward" not in self.expected or not self._graphs_at_open:
            return ()
        if self._stale is None:  # a walk over the process's objects: once per Monitor
            self._stale = runs_stale_graphs(self.model)
        return ("forward",) if self._stale else ()


def _device_of(model: nn.Module) -> torch.device:
    for param in model.parameters():
        return param.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")
