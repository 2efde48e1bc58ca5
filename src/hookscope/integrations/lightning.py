"""`HookscopeCallback` for the Lightning ``Trainer`` (``pip install hookscope[lightning]``).

::

    from hookscope.integrations.lightning import HookscopeCallback

    trainer = lightning.Trainer(max_steps=100, callbacks=[HookscopeCallback()])
    trainer.fit(module, data)  # statistics in <log_dir>/hookscope/monitor.jsonl

The step closes in ``on_before_optimizer_step``, the one hook that runs once
per optimizer step with the step's gradients complete (``on_train_batch_end``
runs once per batch, twice per step with ``accumulate_grad_batches=2``), and
is numbered with ``trainer.global_step`` (0 for the first update). The total
gradient norm, the alerts and the statistics chosen with ``log_stats`` go
through ``pl_module.log`` (``on_step=True``), so every Lightning logger sees
them (see `hookscope.integrations.training` for the names). The doctor runs
once, on the first forward of training, and writes ``doctor.json``.

With ``ranks="reduce"`` under torch.distributed a step's values are not
waited for at its end: they are logged at the next optimizer step (one step
late) and, for the last step of an epoch or of the run, at its last batch,
straight to the trainer's loggers at the next step number: that batch has
logged the step before already, and ``pl_module.log`` keeps one value per
name and batch.

The callback subclasses ``lightning.pytorch.Callback`` when the ``lightning``
package is installed, else ``pytorch_lightning.Callback``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hookscope.errors import MissingExtraError
from hookscope.integrations.training import CallbackBase

try:
    from lightning.pytorch import Callback
except ImportError:  # pragma: no cover - depends on the environment
    try:
        from pytorch_lightning import Callback  # type: ignore[assignment]
    except ImportError as exc:
        raise MissingExtraError(
            "hookscope.integrations.lightning needs Lightning: pip install 'hookscope[lightning]'"
        ) from exc


class HookscopeCallback(CallbackBase, Callback):
    """Monitors the LightningModule: one step per optimizer step, logged through ``pl_module.log``.

    Args:
        doctor: run `hookscope.doctor` once, on the first forward of training,
            with its real inputs (report in ``<log_dir>/hookscope/doctor.json``).
        log_stats: extra ``"phase/stat"`` statistics to log for every monitored
            tensor, e.g. ``("param/norm",)`` for per-parameter gradient norms.
        out_subdir: folder under the Trainer's ``log_dir`` (or
            ``default_root_dir``) for the results.
        every: record full statistics every ``every`` optimizer steps; the
            steps between are still checked for NaN/Inf, so the first one is
            named at its exact step. Default: the Trainer's
            ``log_every_n_steps`` (50 unless set), so the Monitor records as
            often as Lightning logs.
        **monitor_kwargs: keyword arguments for `hookscope.Monitor` (``modules``,
            ``stats``, thresholds, extra ``sinks`` ...).

    Attributes:
        monitor: the `Monitor` (None until training starts).
        doctor_report: the doctor's report (None before the first forward or
            with ``doctor=False``).
    """

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        root = trainer.log_dir or trainer.default_root_dir
        every = self.every or max(1, int(getattr(trainer, "log_every_n_steps", 1) or 1))
        self._run.start(pl_module, Path(root) / self.out_subdir, every)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        _log(pl_module, self._run.step(trainer.global_step))

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        # a step result held (ranks="reduce"): logged before the epoch or the run ends
        last = trainer.is_last_batch or trainer.should_stop
        if last or 0 < trainer.max_steps <= trainer.global_step:
            logs = self._run.flush()
            if (
                logs
            ):  # not through pl_module.log: this batch logged the step before under these names
                logs["epoch"] = float(trainer.current_epoch)  # as Lightning adds to its own
                for logger in trainer.loggers:
                    logger.log_metrics(logs, step=trainer.global_step)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._run.close()


def _log(pl_module: Any, logs: dict[str, float]) -> None:
    for name, value in logs.items():
        pl_module.log(name, value, on_step=True, on_epoch=False)
