"""Monitoring the models a whole script runs (``hookscope run --monitor script.py``).

Inside `monitor_script`, a process-wide forward pre-hook watches module calls.
The first time a module with parameters is called from outside every model
already monitored, it is taken as a root model and a `Monitor` is attached to
it before its forward runs. Each later call of that root starts a new step
(the previous forward, its backward and the optimizer step form one step),
so scripts need no changes. Modules without parameters (loss functions) are
never roots. A submodule called on its own before its parent becomes a root
of its own (and is then monitored twice); call the model first to avoid it.

Output in ``out_dir``: ``monitor.jsonl`` and ``tensorboard/`` for the first
root model; ``monitor-N.jsonl`` and ``tensorboard/model-N/`` for the N-th
further one (N = 1, 2, ...). The JSONL format is described in
`hookscope.sinks.jsonl`.

Concurrency (the sinks keep one writer per file):

* threads: a model called from several threads gets one monitor; finding
  roots and closing steps are serialised by a lock.
* ``fork`` (``multiprocessing`` with the fork start method, DataLoader
  workers): the child records nothing — the watcher ignores every call in
  it, and the inherited sinks never write or flush — so it can neither hang
  on the parent's TensorBoard thread nor append to the parent's file.
* torchrun / torch.distributed ranks: each rank writes ``monitor.rank<N>.jsonl``
  and ``tensorboard/rank<N>/`` (`hookscope.dist`).
* several processes with one ``out_dir``: the second finds ``monitor.jsonl``
  locked and writes ``monitor.pid<PID>.jsonl`` (`hookscope.sinks.JsonlSink`).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torch import nn

from hookscope.errors import MissingExtraError
from hookscope.hooks.globals import global_module_hooks
from hookscope.monitor.core import Monitor
from hookscope.monitor.records import Alert
from hookscope.sinks.base import Sink
from hookscope.sinks.jsonl import JsonlSink


class ScriptMonitor:
    """The monitors `monitor_script` attached, one per root model, in order of first call.

    Args:
        out_dir: where results are written (created).
        options: keyword arguments for each `Monitor` (``sinks`` is set here).
    """

    def __init__(self, out_dir: Path, options: dict[str, Any]) -> None:
        self.out_dir = Path(out_dir)
        self.options = options
        self.monitors: list[Monitor] = []
        self.paths: list[Path] = []
        self._roots: dict[int, tuple[weakref.ref[nn.Module], Monitor]] = {}
        self._members: set[int] = set()
        self._ignored: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self._lock = threading.RLock()
        self._pid = os.getpid()

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
        name = "monitor.jsonl" if index == 0 else f"monitor-{index}.jsonl"
        path = self.out_dir / name
        jsonl = JsonlSink(path)
        sinks: list[Sink] = [jsonl]
        try:
            from hookscope.sinks.tensorboard import TensorBoardSink

            tb_dir = self.out_dir / "tensorboard"
            sinks.append(TensorBoardSink(tb_dir if index == 0 else tb_dir / f"model-{index}"))
        except MissingExtraError:
            pass  # JSONL only
        mon = Monitor(module, sinks=sinks, **self.options).open()
        self.monitors.append(mon)
        self.paths.append(jsonl.path)
        self._roots[id(module)] = (weakref.ref(module), mon)
        self._members.update(id(m) for m in module.modules())

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
        with global_module_hooks(watcher.on_call):
            yield watcher
    finally:
        watcher.close()
