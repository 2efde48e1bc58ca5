"""Weights & Biases sink: a monitored step becomes one ``run.log`` call.

Metric names and the default per-layer subset are those of
`hookscope.sinks.metrics`. Charts use ``hookscope/step`` (the Monitor's step)
as their x axis (``run.define_metric``), so the loop's own ``wandb.log``
calls, before or after ``mon.step()``, never clash with hookscope's step
numbers. The first NaN/Inf goes into the run summary
(``hookscope/first_nonfinite``).

Under torch.distributed only rank 0 opens a run and logs (with
``Monitor(ranks="reduce")`` its records cover every rank); a process forked
after the sink opened logs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hookscope import dist
from hookscope.errors import UsageError, require_extra
from hookscope.monitor.records import StepResult
from hookscope.sinks.metrics import MetricSelection, StatsOption, nonfinite_text


class WandbSink:
    """Log each recorded step to a Weights & Biases run.

    One line in a plain training loop::

        with hookscope.Monitor(model, sinks=[WandbSink(project="my-project")]) as mon:

    Args:
        run: the run to log to (what ``wandb.init`` returned); None: the active
            ``wandb.run``, or, with none active (or with ``project``/``name``
            given), a new run from ``wandb.init(project=..., name=..., dir=...,
            **init)`` that `close` finishes. A run passed in or already active
            is left open.
        project: W&B project of a new run.
        name: display name of a new run.
        dir: where a new run writes its files (``wandb.init(dir=...)``; created).
        stats: which statistics to log (see `hookscope.sinks.metrics.MetricSelection`):
            None for the default per-layer subset, ``"all"``, a list, or
            ``{phase: list}``.
        modules: glob pattern(s) of module/parameter names to log (None: all).
        prefix: put before every metric name.
        **init: more ``wandb.init`` arguments for a new run (``config``, ``tags``, ...).

    Raises:
        MissingExtraError: wandb is not installed (``pip install 'hookscope[wandb]'``).
        UsageError: a bad ``stats``, ``modules`` or ``prefix``.
    """

    def __init__(
        self,
        run: Any = None,
        *,
        project: str | None = None,
        name: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        stats: StatsOption = None,
        modules: str | Sequence[str] | None = None,
        prefix: str = "hookscope/",
        **init: Any,
    ) -> None:
        self.selection = MetricSelection(stats, modules, prefix)
        wandb: Any = require_extra("wandb", "wandb")
        self._owned = False
        self._pid = os.getpid()
        self._nonfinite_logged = False
        self.run: Any = None
        self._closed = False
        if dist.where()[0] != 0:
            return  # only rank 0 logs
        fresh = run is None and (wandb.run is None or project is not None or name is not None)
        if fresh:
            folder = None if dir is None else Path(dir)
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
            run = wandb.init(project=project, name=name, dir=folder, **init)
            self._owned = True
        self.run = run if run is not None else wandb.run
        self.run.define_metric(f"{prefix}*", step_metric=f"{prefix}step")

    def write(self, result: StepResult) -> None:
        """Log the step's metrics (one ``run.log`` call) with ``hookscope/step`` = ``result.step``."""
        if self.run is None or os.getpid() != self._pid:
            return
        if self._closed:
            raise UsageError("WandbSink is closed")
        metrics: dict[str, Any] = self.selection.metrics(result)
        metrics[f"{self.selection.prefix}step"] = result.step
        self.run.log(metrics)
        first = result.first_nonfinite
        if first is not None and not self._nonfinite_logged:
            self.run.summary[f"{self.selection.prefix}first_nonfinite"] = nonfinite_text(first)
            self._nonfinite_logged = True

    def close(self) -> None:
        """Finish the run if this sink started it (idempotent)."""
        if self.run is None or self._closed:
            return
        self._closed = True
        if self._owned and os.getpid() == self._pid:
            self.run.finish()
