"""MLflow sink: a monitored step becomes one ``log_batch`` call on an MLflow run.

Metric names and the default per-layer subset are those of
`hookscope.sinks.metrics`; each metric's ``step`` is the Monitor's step. The
first NaN/Inf becomes the run tag ``hookscope.first_nonfinite``.

Under torch.distributed only rank 0 opens a run and logs (with
``Monitor(ranks="reduce")`` its records cover every rank); a process forked
after the sink opened logs nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from hookscope import dist
from hookscope.errors import UsageError, require_extra
from hookscope.monitor.records import StepResult
from hookscope.sinks.metrics import MetricSelection, StatsOption, nonfinite_text

#: MLflow takes at most 1000 metrics per ``log_batch`` call.
BATCH = 1000


class MlflowSink:
    """Log each recorded step to an MLflow run.

    One line in a plain training loop::

        with hookscope.Monitor(model, sinks=[MlflowSink(experiment="my-experiment")]) as mon:

    Args:
        run_id: the run to log to; None: the active run (``mlflow.start_run()``)
            when there is one and neither ``experiment``, ``run_name`` nor
            ``tracking_uri`` is given, else a new run that `close` ends.
        experiment: experiment name of a new run (created if missing; None:
            MLflow's default experiment).
        run_name: name of a new run.
        tracking_uri: where runs are stored (``"sqlite:///runs/mlflow.db"``, a
            server URL); None: MLflow's own default (``MLFLOW_TRACKING_URI``).
        stats: which statistics to log (see `hookscope.sinks.metrics.MetricSelection`):
            None for the default per-layer subset, ``"all"``, a list, or
            ``{phase: list}``.
        modules: glob pattern(s) of module/parameter names to log (None: all).
        prefix: put before every metric name.

    Raises:
        MissingExtraError: mlflow is not installed (``pip install 'hookscope[mlflow]'``).
        UsageError: a bad ``stats``, ``modules`` or ``prefix``.
    """

    def __init__(
        self,
        run_id: str | None = None,
        *,
        experiment: str | None = None,
        run_name: str | None = None,
        tracking_uri: str | None = None,
        stats: StatsOption = None,
        modules: str | Sequence[str] | None = None,
        prefix: str = "hookscope/",
    ) -> None:
        self.selection = MetricSelection(stats, modules, prefix)
        mlflow: Any = require_extra("mlflow", "mlflow")
        entities: Any = require_extra("mlflow.entities", "mlflow")
        self._metric = entities.Metric
        self._pid = os.getpid()
        self._owned = False
        self._closed = False
        self._nonfinite_logged = False
        self.run_id: str | None = None
        self.client: Any = None
        if dist.where()[0] != 0:
            return  # only rank 0 logs
        self.client = mlflow.MlflowClient(tracking_uri=tracking_uri)
        active = mlflow.active_run()
        choosing = experiment is not None or run_name is not None or tracking_uri is not None
        if run_id is None and active is not None and not choosing:
            run_id = active.info.run_id
        if run_id is None:
            run_id = self._new_run(experiment, run_name)
            self._owned = True
        self.run_id = run_id

    def _new_run(self, experiment: str | None, run_name: str | None) -> str:
        if experiment is None:
            experiment_id = "0"  # MLflow's "Default" experiment
        else:
            found = self.client.get_experiment_by_name(experiment)
            experiment_id = (
                found.experiment_id if found else self.client.create_experiment(experiment)
            )
        return str(self.client.create_run(experiment_id, run_name=run_name).info.run_id)

    def write(self, result: StepResult) -> None:
        """Log the step's metrics at ``step=result.step`` (batches of `BATCH`)."""
        if self.run_id is None or os.getpid() != self._pid:
            return
        if self._closed:
            raise UsageError(f"MlflowSink(run {self.run_id}) is closed")
        stamp = int(time.time() * 1000)
        metrics = [
            self._metric(name, value, stamp, result.step)
            for name, value in self.selection.metrics(result).items()
        ]
        for start in range(0, len(metrics), BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[start : start + BATCH])
        first = result.first_nonfinite
        if first is not None and not self._nonfinite_logged:
            tag = self.selection.prefix.replace("/", ".") + "first_nonfinite"
            self.client.set_tag(self.run_id, tag, nonfinite_text(first))
            self._nonfinite_logged = True

    def close(self) -> None:
        """End the run if this sink started it (idempotent)."""
        if self.run_id is None or self._closed:
            return
        self._closed = True
        if self._owned and os.getpid() == self._pid:
            self.client.set_terminated(self.run_id)
