"""What the trainer callbacks share: a Monitor closed once per optimizer step, a doctor at the start.

`TrainingMonitor` is driven by a trainer's events: `start` when training
begins, `step` once per optimizer step with the trainer's global step, `close`
when training ends. `step` returns the scalars to hand to the trainer's own
logging (so its loggers, TensorBoard, wandb, MLflow, see them):

- ``hookscope/grad_norm``: total L2 norm of the parameter gradients of the
  step (the square root of the sum of the squared per-parameter norms; the
  norm before any clipping, as trainers log it). Under torch.distributed it
  is the norm of the gradients the optimizer sees (after DDP's all-reduce,
  whole across FSDP shards), the trainer's ``grad_norm``: the Monitor runs
  with ``grads="reduced"`` unless ``grads`` is given. With ``grads`` set to
  ``True`` or ``"local"`` there, each rank's own gradient before the
  all-reduce is logged as ``hookscope/grad_norm_local`` instead;
- ``hookscope/alerts``: how many alerts fired at the step, and one
  ``hookscope/alert/<rule>/<phase>/<module>/<tensor>`` per alert with the
  value that broke the rule;
- ``hookscope/first_nonfinite_step``: the step where the first NaN/Inf
  appeared, once it has (the module is named in a warning and in
  ``monitor.first_nonfinite``);
- ``hookscope/<phase>/<module>/<tensor>/<stat>`` for the statistics chosen
  with ``log_stats`` (``"param/norm"``, ``"forward/absmax"``, ...).

The doctor runs once, on the first module the trainer calls, with that call's
own inputs, before the call goes on and before the Monitor is attached (so
its extra forward is not in the statistics; the random number generators are
restored after it, so training sees the same dropout masks as without it).
Its report goes to ``doctor.json`` and, when a hook cannot fire or a forward
bypasses its hooks, into a warning.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

import hookscope
from hookscope import dist
from hookscope.errors import HookscopeError, UsageError
from hookscope.hooks import HookSession
from hookscope.monitor import Monitor
from hookscope.monitor.deferred import DeferredResult
from hookscope.monitor.records import Record, StepResult
from hookscope.sinks.jsonl import JsonlSink
from hookscope.stats import ALL_STATS, GRAD_STATS

logger = logging.getLogger("hookscope.integrations")

_PHASES = ("forward", "backward", "param")
PREFIX = "hookscope/"
_SHOWN = 3  # alerts named in the warning of one step


def check_log_stats(log_stats: Sequence[str]) -> tuple[str, ...]:
    """Validate ``"phase/stat"`` choices (e.g. ``"param/norm"``); returns them as a tuple."""
    if isinstance(log_stats, str):
        log_stats = [log_stats]
    chosen = tuple(log_stats)
    for item in chosen:
        phase, _, stat = str(item).partition("/")
        known = ALL_STATS if phase == "forward" else GRAD_STATS
        if phase not in _PHASES or stat not in known:
            raise UsageError(
                f"log_stats entries are 'phase/stat' with phase in {_PHASES} "
                f"(e.g. 'param/norm', 'forward/absmax'), got {item!r}"
            )
    return chosen


def total_grad_norm(records: Sequence[Record]) -> float | None:
    """L2 norm over every parameter gradient of a step (None without ``param`` records)."""
    norms = [r.value for r in records if r.phase == "param" and r.stat == "norm"]
    if not norms:
        return None
    return math.sqrt(math.fsum(v * v for v in norms))


class TrainingMonitor:
    """A `Monitor` and a one-time doctor, driven by a trainer's events.

    Args:
        doctor: run `hookscope.doctor` once, on the first call the trainer makes.
        log_stats: ``"phase/stat"`` statistics to log per tensor, besides the
            total gradient norm and the alerts.
        monitor_kwargs: keyword arguments for `hookscope.Monitor` (``sinks`` are
            added to the JSONL sink written under the trainer's output folder).
    """

    def __init__(
        self, *, doctor: bool, log_stats: Sequence[str], monitor_kwargs: Mapping[str, Any]
    ) -> None:
        if not isinstance(doctor, bool):
            raise UsageError(f"doctor must be True or False, got {doctor!r}")
        self.doctor = doctor
        self.log_stats = check_log_stats(log_stats)
        self.monitor_kwargs = dict(monitor_kwargs)
        if "model" in self.monitor_kwargs:
            raise UsageError("the trainer's model is monitored; do not pass model=")
        Monitor(nn.Identity(), **self.monitor_kwargs)  # bad options fail now, not mid-training
        self.monitor: Monitor | None = None
        self.doctor_report: Any = None
        self.out_dir: Path | None = None
        self._model: nn.Module | None = None
        self._probe: HookSession | None = None
        self._reported_nonfinite = False
        self._held: StepResult | None = None
        #: ``hookscope/grad_norm``, or ``hookscope/grad_norm_local`` for each rank's own
        #: gradient before the all-reduce (`_open_monitor`).
        self._norm_name = PREFIX + "grad_norm"

    def start(self, model: nn.Module, out_dir: Path, every: int | None = None) -> None:
        """Attach to ``model`` (the doctor first, when asked); results go into ``out_dir``.

        ``every``: the Monitor's cadence unless ``every`` was among the options.
        """
        if self._model is not None:
            return  # already attached
        if every is not None:
            self.monitor_kwargs.setdefault("every", every)
        self._reported_nonfinite = False
        self._held = None
        self.monitor = self.doctor_report = None
        self._model, self.out_dir = model, Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if not self.doctor:
            self._open_monitor()
            return
        # One forward pre-hook on every module: the first call the trainer makes
        # (whatever module its step calls first) runs the doctor with its inputs.
        self._probe = hookscope.session(model, on_error="warn", keep_wrappers=True).__enter__()
        self._probe.add_forward_pre_hook(self._first_call, with_kwargs=True)

    def _first_call(
        self, _name: str, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """Forward pre-hook ``(name, module, args, kwargs) -> None`` of the first call."""
        if self._probe is None:
            return
        self._probe.close()
        self._probe = None
        try:
            self._run_doctor(module, args, kwargs)
        finally:
            self._open_monitor()

    def _run_doctor(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        assert self.out_dir is not None
        devices = sorted({p.device.index or 0 for p in module.parameters() if p.is_cuda})
        try:
            with torch.random.fork_rng(devices=devices):
                report = hookscope.doctor(module, *args, **kwargs)
        except HookscopeError as exc:
            logger.warning("hookscope doctor could not run: %s", exc)
            return
        self.doctor_report = report
        path = self.out_dir / "doctor.json"
        path.write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        if report.bypasses or not report.ok:
            logger.warning("hookscope doctor found problems (%s):\n%s", path, report)

    def _open_monitor(self) -> None:
        assert self._model is not None and self.out_dir is not None
        options = dict(self.monitor_kwargs)
        sinks = [JsonlSink(self.out_dir / "monitor.jsonl"), *options.pop("sinks", ())]
        distributed = dist.where()[1] > 1
        if distributed and options.get("params", True):
            # the trainer's grad_norm is the reduced gradient's: so is ours by default
            options.setdefault("grads", "reduced")
        self.monitor = Monitor(self._model, sinks=sinks, **options).open()
        local = distributed and self.monitor.grad_mode == "local"
        self._norm_name = PREFIX + ("grad_norm_local" if local else "grad_norm")

    def step(self, step: int) -> dict[str, float]:
        """Close the Monitor's step as ``step``; returns the scalars to log now (may be empty).

        With ``ranks="reduce"`` under torch.distributed the step's result is
        still on its way (a `hookscope.monitor.deferred.DeferredResult`): it is
        held, not waited for, and its scalars come with the next `step` (which
        completes it anyway) or `flush`, so training never waits for the
        all-reduces.
        """
        if self.monitor is None:
            return {}  # nothing ran yet (the doctor opens the monitor on the first call)
        result = self.monitor.step(step=step)
        logs = self.flush()  # the held result: completed by this step() already
        if isinstance(result, DeferredResult) and not result.settled:
            self._held = result
        elif result is not None:
            logs.update(self._scalars(result))
        return logs

    def flush(self) -> dict[str, float]:
        """The scalars of a held step result (waits for its all-reduces, if still running)."""
        held, self._held = self._held, None
        return {} if held is None else self._scalars(held)

    def _scalars(self, result: StepResult) -> dict[str, float]:
        logs: dict[str, float] = {}
        norm = total_grad_norm(result.records)
        if norm is not None:
            logs[self._norm_name] = norm
        for r in result.records:
            if f"{r.phase}/{r.stat}" in self.log_stats:
                logs[f"{PREFIX}{r.phase}/{r.module}/{r.tensor}/{r.stat}"] = r.value
        logs[PREFIX + "alerts"] = float(len(result.alerts))
        for a in result.alerts:
            logs[f"{PREFIX}alert/{a.rule}/{a.phase}/{a.module}/{a.tensor}"] = a.value
        if result.alerts:
            shown = "; ".join(
                f"{a.rule} {a.phase} {a.module or '(root)'} {a.tensor} = {a.value:g}"
                for a in result.alerts[:_SHOWN]
            )
            more = len(result.alerts) - _SHOWN
            logger.warning(
                "hookscope: %d alert(s) at step %d: %s%s",
                len(result.alerts), result.step, shown, f"; and {more} more" if more > 0 else "",
            )  # fmt: skip
        first = result.first_nonfinite
        if first is not None:
            logs[PREFIX + "first_nonfinite_step"] = float(first.step)
            if not self._reported_nonfinite:
                self._reported_nonfinite = True
                logger.warning(
                    "hookscope: the first NaN/Inf appeared at step %d in the %s of %s (%s)",
                    first.step, first.phase, first.module or "(root)", first.tensor,
                )  # fmt: skip
        return logs

    def close(self) -> None:
        """Remove every hook and close the sinks (idempotent); a later `start` begins afresh."""
        if self._probe is not None:
            self._probe.close()
            self._probe = None
        if self.monitor is not None:
            self.monitor.close()
        self._model = None


class CallbackBase:
    """What both ``HookscopeCallback`` classes share: options, `monitor`, `doctor_report`.

    Args: see the trainer's ``HookscopeCallback``.
    """

    def __init__(
        self,
        *,
        doctor: bool = True,
        log_stats: Sequence[str] = (),
        out_subdir: str = "hookscope",
        every: int | None = None,
        **monitor_kwargs: Any,
    ) -> None:
        if every is not None:
            monitor_kwargs["every"] = every  # checked by the Monitor made below, now
        self._run = TrainingMonitor(
            doctor=doctor, log_stats=log_stats, monitor_kwargs=monitor_kwargs
        )
        #: Record every this many steps; None: the trainer's logging cadence (`cadence`).
        self.every = every
        self.out_subdir = out_subdir
        #: Scalars waiting for the trainer's next log call.
        self._pending: dict[str, float] = {}

    @property
    def monitor(self) -> Monitor | None:
        """The `Monitor` (None until training starts)."""
        return self._run.monitor

    @property
    def doctor_report(self) -> Any:
        """The doctor's report (None before the first forward or with ``doctor=False``)."""
        return self._run.doctor_report
