"""Monitoring the models a whole script runs (``hookscope run --monitor script.py``).

Inside `monitor_script`, a process-wide forward pre-hook watches module calls.
The first time a module with parameters is called from outside every model
already monitored, it is taken as a root model and a `Monitor` is attached to
it before its forward runs. Scripts need no changes; steps follow one of two
rules, per root model (`ScriptMonitor.rules` says which):

- ``"optimizer"``: one step per optimizer step. A process-wide optimizer step
  post-hook closes the step of every root model whose parameters the
  optimizer updates, so gradient accumulation (several forwards per
  optimizer step) and trainers (HF ``Trainer``, Lightning, accelerate) give
  exactly one step per update.
- ``"forward"``: the fallback while no optimizer has stepped a model's
  parameters: each later call of the root closes the previous step. A call
  that finds gradients on the model's parameters (a backward ran, the
  optimizer has not stepped yet: gradient accumulation) leaves the step open.

Modules without parameters (loss functions) are never roots. A submodule
called on its own before its parent becomes a root of its own (and is then
monitored twice); call the model first to avoid it.

Output in ``out_dir`` (`hookscope.sinks.defaults`): the run store
``monitor/`` (`hookscope.store`; ``store_format="jsonl"``: ``monitor.jsonl``)
and a light TensorBoard summary in ``tensorboard/`` for the first root model;
``monitor-N/`` and ``tensorboard/model-N/`` for the N-th further one
(N = 1, 2, ...).

Concurrency (the sinks keep one writer per file):

* threads: a model called from several threads gets one monitor; finding
  roots and closing steps are serialised by a lock.
* ``fork`` (``multiprocessing`` with the fork start method, DataLoader
  workers): the child records nothing — the watcher ignores every call in
  it, and the inherited sinks never write or flush — so it can neither hang
  on the parent's TensorBoard thread nor append to the parent's file.
* torchrun / torch.distributed ranks: each rank writes its own files,
  ``monitor/records/rank<N>-*.parquet`` and ``tensorboard/rank<N>/`` (`hookscope.dist`).
* several processes with one ``out_dir``: the second finds the writer
  ``main`` locked and writes as ``pid<PID>`` (`hookscope.store.StoreWriter`).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.hooks.globals import global_module_hooks, global_optimizer_step_hooks
from hookscope.monitor.core import Monitor
from hookscope.monitor.records import Alert
from hookscope.sinks.base import Sink
from hookscope.sinks.defaults import check_format, run_sinks


class ScriptMonitor:
    """The monitors `monitor_script` attached, one per root model, in order of first call.

    Args:
        out_dir: where results are written (created).
        options: keyword arguments for each `Monitor` (``sinks`` is set here).
    """

    def __init__(self, out_dir: Path, options: dict[str, Any]) -> None:
        self.out_dir = Path(out_dir)
        self.format = check_format(options.get("store_format", "parquet"))
        self.options = {k: v for k, v in options.items() if k != "store_format"}
        self.sinks: list[Sink] = []  # each model's statistics sink (a StoreSink or JsonlSink)
        self.monitors: list[Monitor] = []
        self.paths: list[Path] = []
        self._roots: dict[int, tuple[weakref.ref[nn.Module], Monitor]] = {}
        self._members: set[int] = set()
        self._ignored: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._params: list[frozenset[int]] = []  # parameter ids of each monitored model
        self._by_optimizer: set[int] = set()  # indices of monitors stepped by an optimizer
        self._owners: weakref.WeakKeyDictionary[
            torch.optim.Optimizer, tuple[tuple[int, int], list[int]]
        ]
        self._owners = weakref.WeakKeyDictionary()

    @property
    def rules(self) -> list[str]:
        """The step rule of each monitor: ``"optimizer"`` or ``"forward"`` (see the module doc)."""
        return [
            "optimizer" if i in self._by_optimizer else "forward" for i in range(len(self.monitors))
        ]

    @property
    def alerts(self) -> list[Alert]:
        """Alerts of every monitored model."""
        return [alert for mon in self.monitors for alert in mon.alerts]

    def on_call(self, module: nn.Module, _args: tuple[Any, ...]) -> None:
        """Global forward pre-hook ``(module, args) -> None``: find roots, mark steps."""
        if self._pid != os.getpid():
            self._forked()
            return
        with self._lock:
            self._on_call(module)

    def _forked(self) -> None:
        """In a forked child: stop recording (the sinks already refuse to write here)."""
        for mon in self.monitors:
            mon.pause()

    def _on_call(self, module: nn.Module) -> None:
        key = id(module)
        root = self._roots.get(key)
        if root is not None and root[0]() is module:
            index = self.monitors.index(root[1])
            if index not in self._by_optimizer and not _has_grads(module):
                root[1].step()  # the root is called again: the previous step is complete
            return
        if key in self._members or module in self._ignored:
            return
        if next(module.parameters(), None) is None:
            self._ignored.add(module)
            return
        self._attach(module)

    def _attach(self, module: nn.Module) -> None:
        index = len(self.monitors)
        sinks, path = run_sinks(self.out_dir, index, fmt=self.format)
        mon = Monitor(module, sinks=sinks, **self.options).open()
        self.monitors.append(mon)
        self.paths.append(path)
        self.sinks.append(sinks[0])
        self._roots[id(module)] = (weakref.ref(module), mon)
        self._members.update(id(m) for m in module.modules())
        self._params.append(frozenset(id(p) for p in module.parameters()))

    def on_optimizer_step(
        self, optimizer: torch.optim.Optimizer, _args: tuple[Any, ...], _kwargs: dict[str, Any]
    ) -> None:
        """Optimizer step post-hook ``(optimizer, args, kwargs) -> None``: close steps."""
        if self._pid != os.getpid():
            self._forked()
            return
        with self._lock:
            for index in self._stepped_by(optimizer):
                self._by_optimizer.add(index)
                self.monitors[index].step()

    def _stepped_by(self, optimizer: torch.optim.Optimizer) -> list[int]:
        """Indices of the monitored models whose parameters ``optimizer`` updates."""
        key = (len(self.monitors), len(optimizer.param_groups))
        cached = self._owners.get(optimizer)
        if cached is not None and cached[0] == key:
            return cached[1]
        ids = {id(p) for group in optimizer.param_groups for p in group["params"]}
        found = [i for i, params in enumerate(self._params) if not params.isdisjoint(ids)]
        self._owners[optimizer] = (key, found)
        return found

    def close(self) -> None:
        """Finish open steps and close every monitor and sink (in a forked child: drop them)."""
        for mon in self.monitors:
            if self._pid != os.getpid():
                mon.pause()
            mon.close()


@contextmanager
def monitor_script(out_dir: Path, **options: Any) -> Iterator[ScriptMonitor]:
    """Monitor every model called inside the block; write results into ``out_dir``.

    Args:
        out_dir: the run directory (created); see the module docstring for its files.
        **options: keyword arguments for each `Monitor` (``every``, ``stats``, ...).

    Yields:
        The `ScriptMonitor`; after the block, ``.monitors`` and ``.alerts`` hold the results.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    watcher = ScriptMonitor(out, options)
    try:
        with (
            global_module_hooks(watcher.on_call),
            global_optimizer_step_hooks(watcher.on_optimizer_step),
        ):
            yield watcher
    finally:
        watcher.close()


def _has_grads(model: nn.Module) -> bool:
    return any(p.grad is not None for p in model.parameters())
