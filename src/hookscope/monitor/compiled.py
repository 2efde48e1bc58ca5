"""What a `Monitor` does for compiled models: traced statistics, honest gaps, clean names.

* `TracedCollector` (`hookscope.monitor.traced`) takes the forward hook over
  while dynamo traces it.
* On open, a compiled model whose ``forward`` already has cached graphs
  (traced without the hooks) gets a `StaleGraphWarning` at once.
* Each step, `missing_phases` names the phases whose hooks did not run; the
  first such step warns (`hookscope.monitor.coverage`).
* Names lose wrapper components (``_orig_mod.`` from ``torch.compile``,
  ``module.`` from DDP) through `hookscope.names`, so a compiled model's
  records read like the eager model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

from hookscope.hooks.compiled import warn_stale
from hookscope.hooks.selection import SelectedModule
from hookscope.monitor.collector import Entry
from hookscope.monitor.coverage import missing_phases, warn_missing
from hookscope.monitor.records import Phase
from hookscope.monitor.traced import TracedCollector
from hookscope.names import clean_names, clean_param_name
from hookscope.stats import Plan

if TYPE_CHECKING:
    from hookscope.monitor.core import Monitor


class CompiledSupport:
    """Per-Monitor state for compiled graphs; created by `Monitor.open`."""

    def __init__(
        self, monitor: Monitor, selected: Sequence[SelectedModule], plans: dict[str, Plan]
    ):
        model = monitor.model
        warn_stale(model, "Monitor", stacklevel=5)
        self.model = model
        self.traced = TracedCollector(
            [sel.name for sel in selected],
            plans,
            outputs=monitor.outputs,
            grads=monitor.grads,
            device=_device_of(model),
        )
        trainable = any(p.requires_grad for p in model.parameters())
        expected: list[Phase] = []
        if monitor.outputs or monitor.inputs:
            expected.append("forward")
        if monitor.grads:
            expected.append("backward")
        if monitor.params and trainable:
            expected.append("param")
        self.expected = tuple(expected)
        self.rename = _renames(model)
        self._warned = False

    def check(self, step: int, entries: list[Entry]) -> tuple[list[Entry], tuple[Phase, ...]]:
        """Clean the entries' names and find (and warn once about) missing phases."""
        missing = missing_phases(entries, self.expected)
        if missing and not self._warned:
            self._warned = True
            warn_missing(self.model, step, missing)
        if self.rename:
            rename = self.rename
            for entry in entries:
                entry.roles = [
                    (rename.get(name, name), path, shown) for name, path, shown in entry.roles
                ]
        return entries, missing


def _renames(model: nn.Module) -> dict[str, str]:
    """Raw module and parameter names that `hookscope.names` cleans, mapped to the clean ones."""
    names = clean_names(model)
    out = {raw: clean for raw, clean in names.items() if raw != clean}
    for raw, _param in model.named_parameters(remove_duplicate=False):
        clean = clean_param_name(raw, names)
        if clean != raw:
            out[raw] = clean
    return out


def _device_of(model: nn.Module) -> torch.device:
    for param in model.parameters():
        return param.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")
