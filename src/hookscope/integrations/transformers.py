"""`HookscopeCallback` for the Hugging Face ``transformers.Trainer`` (``pip install hookscope[transformers]``).

::

    from hookscope.integrations.transformers import HookscopeCallback

    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[HookscopeCallback()])
    trainer.train()  # statistics in <output_dir>/hookscope/monitor.jsonl

One Monitor step per optimizer step, numbered with the Trainer's
``state.global_step`` (1 for the first update, as in ``log_history``),
whatever ``gradient_accumulation_steps`` is. The total gradient norm, the
alerts and the statistics chosen with ``log_stats`` go through the Trainer's
own logging (``state.log_history`` and every ``report_to`` integration; see
`hookscope.integrations.training` for the names); a step with an alert is
logged even between ``logging_steps``. The doctor runs once, on the first
forward of training, and writes ``doctor.json``.

With ``ranks="reduce"`` under torch.distributed a step's values are not
waited for at its end: they are taken at the next step or at the Trainer's
next log (the final one included), whichever comes first, so only a log
call can wait for the all-reduces (and an alert is logged a step late).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hookscope.errors import MissingExtraError
from hookscope.integrations.training import CallbackBase

try:
    from transformers import TrainerCallback
    from transformers.trainer_callback import CallbackHandler
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        "hookscope.integrations.transformers needs transformers: "
        "pip install 'hookscope[transformers]'"
    ) from exc


class HookscopeCallback(CallbackBase, TrainerCallback):
    """Monitors the Trainer's model: one step per optimizer step, logged through the Trainer.

    Args:
        doctor: run `hookscope.doctor` once, on the first forward of training,
            with its real inputs (report in ``<output_dir>/hookscope/doctor.json``).
        log_stats: extra ``"phase/stat"`` statistics to log for every monitored
            tensor, e.g. ``("param/norm",)`` for per-parameter gradient norms.
        out_subdir: folder under the Trainer's ``output_dir`` for the results.
        every: record full statistics every ``every`` optimizer steps (those
            whose ``global_step`` it divides); the steps between are still
            checked for NaN/Inf, so the first one is named at its exact step.
            Default: the Trainer's ``logging_steps`` (with
            ``logging_strategy="steps"``; else every step), so the Monitor
            records when the Trainer logs and a long run's files and memory
            grow with its logs, not with every step.
        **monitor_kwargs: keyword arguments for `hookscope.Monitor` (``modules``,
            ``stats``, thresholds, extra ``sinks`` ...).

    Attributes:
        monitor: the `Monitor` (None until training starts).
        doctor_report: the doctor's report (None before the first forward or
            with ``doctor=False``).
    """

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        _run_first_on_log(self)
        every = self.every or logging_cadence(args, state)
        self._run.start(kwargs["model"], Path(args.output_dir) / self.out_subdir, every)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        logs = self._run.step(state.global_step)
        if any(key.startswith("hookscope/alert/") for key in logs):
            control.should_log = True  # alerts are logged at their own step
        self._pending.update(logs)

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        self._pending.update(self._run.flush())  # a step result still held (ranks="reduce")
        if not self._pending or logs is None:
            return
        logs.update(self._pending)
        # The Trainer appended a copy of ``logs`` to the history before calling us.
        history = state.log_history
        if history and history[-1].get("step") == state.global_step:
            history[-1].update(self._pending)
        self._pending = {}

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._run.close()


def logging_cadence(args: Any, state: Any) -> int:
    """The Trainer's ``logging_steps`` as a step count (a fraction of ``max_steps`` too); else 1."""
    strategy = getattr(args, "logging_strategy", "steps")
    if getattr(strategy, "value", strategy) != "steps":
        return 1
    steps = float(getattr(args, "logging_steps", 1) or 1)
    if steps < 1:  # a ratio of the run's length
        steps = steps * float(getattr(state, "max_steps", 0) or 0)
    return max(1, int(steps))


def _run_first_on_log(callback: HookscopeCallback) -> None:
    """Move ``callback`` to the front of the Trainer's callbacks (called from one of its events).

    The ``report_to`` integrations are created before user callbacks and read
    ``logs`` in their own ``on_log``; hookscope's values must be in ``logs``
    before they run. Callbacks receive no handle on the Trainer, so the
    `CallbackHandler` is found as the caller of the event; when it is not
    there (a future transformers), the values still reach ``log_history``.
    """
    caller = sys._getframe(2).f_locals.get("self")
    if isinstance(caller, CallbackHandler) and callback in caller.callbacks:
        caller.callbacks.remove(callback)
        caller.callbacks.insert(0, callback)
