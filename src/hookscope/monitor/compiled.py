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
from hookscope.monitor.coverage import missing_phases, warn_inputs, warn_missing
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

    def check(self, step: int, entries: list[Entry]) -> tuple[Missing, ...]:
        """What ``step`` missed (`missing_phases`, and ``"inputs"``); the first time, a warning.

        ``inputs=True`` statistics are eager-only: when a compiled graph ran
        in the step, its modules' inputs were not reduced.
        """
        phases = missing_phases(entries, self.expected)
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


def _device_of(model: nn.Module) -> torch.device:
    for param in model.parameters():
        return param.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")
