"""`Monitor`: per-layer activation and gradient statistics, alerts and the first NaN/Inf."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any

from torch import nn

from hookscope import dist
from hookscope._interrupts import critical, interruptible, setup_interrupted
from hookscope.errors import UsageError
from hookscope.hooks.globals import TensorGradHooks
from hookscope.hooks.handles import HookFailure
from hookscope.hooks.selection import ModuleSelector, nothing_selected, select_modules
from hookscope.hooks.session import HookSession, OnError, session
from hookscope.monitor.alerts import AlertRules, Thresholds
from hookscope.monitor.collector import CollectOptions, Collector
from hookscope.monitor.compiled import CompiledSupport
from hookscope.monitor.deferred import DeferredResult
from hookscope.monitor.entries import Entry
from hookscope.monitor.history import DEFAULT_HISTORY, History
from hookscope.monitor.options import (
    ZeroPolicy,
    check_history,
    check_options,
    check_ranks,
    check_stats,
    zero_plan,
)
from hookscope.monitor.ranks import Exchange, GradReader, Grads, RankCombiner, Ranks
from hookscope.monitor.ratios import UpdateRatios
from hookscope.monitor.records import Alert, NonFinite, Phase, Record, StepResult, TensorInfo
from hookscope.monitor.results import (
    InfoKey,
    Key,
    clean_keys,
    find_nonfinite,
    merge_entries,
    summaries,
)
from hookscope.monitor.sentinel import check_step
from hookscope.monitor.tables import monitor_html
from hookscope.names import clean_names
from hookscope.sinks.group import SinkGroup
from hookscope.stats import Plan, Reduction, fetch, plan_for

if TYPE_CHECKING:
    from hookscope.sinks.base import Sink


class Monitor:
    """Per-layer statistics of activations and gradients, brought to the host once per step.

    Use as a context manager around a training (or eval) loop and call
    `step` once per iteration::

        with hookscope.Monitor(model, sinks=[JsonlSink("run/monitor.jsonl")]) as mon:
            for x, y in data:
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                mon.step()
        mon.to_pandas(); mon.alerts; mon.first_nonfinite

    Hooks (registered through a `hookscope.session`, removed on exit): a forward
    pre-hook ``(name, module, args)`` and a forward hook
    ``(name, module, args, output)`` on each selected module, tensor gradient
    hooks ``(grad)`` on their outputs and inputs, and a post-accumulate-grad
    hook ``(name, param)`` on each trainable parameter. None of them reads a
    device value back; statistics stay on the device until `step`. (CPU
    tensors are reduced by a C kernel straight into host memory, and a hook
    reads those values to decide whether exact NaN/Inf counts, or a check of
    the module's inputs, are needed; that is not a synchronisation.)

    Tensors are reduced when the hook runs, so in-place changes made later
    (``nn.ReLU(inplace=True)`` after a BatchNorm) do not alter the statistics
    already taken. A module called several times in a step gets statistics
    merged over its calls.

    Args:
        model: the root module.
        modules: which modules (glob, type, predicate or a list; see
            `hookscope.hooks.ModuleSelector`); default every leaf module.
        stats: activation statistics to report, from ``mean, std, min, max,
            absmax, rms, zero_frac, nan_count, inf_count, norm``; default all
            but ``norm``. Fewer statistics mean fewer reductions. Gradients
            always report ``norm, rms, nan_count, inf_count``.
        inputs: also report module inputs (tensor paths ``input[i]``); eager
            only: a step in which a ``torch.compile``d graph ran warns once
            and its ``StepResult.missing`` contains ``"inputs"``.
        outputs: report module outputs.
        grads: report gradients w.r.t. module outputs (phase ``backward``):
            ``True`` or ``"local"``; ``"reduced"`` also takes parameter
            gradients after the backward, as the optimizer sees them (after
            DDP's all-reduce; the full norm across FSDP shards) instead of each
            rank's local gradient before the reduction; ``False``: none.
        params: report parameter gradient norms (phase ``param``).
        ranks: under torch.distributed, ``"local"`` (each rank reports its own
            tensors) or ``"reduce"`` (``step`` combines all ranks' statistics
            exactly with two all-reduces, whatever the world size, and does
            not wait for them: its result completes when first read, or at
            the next ``step``/``close``; every rank must call ``step``). See
            `hookscope.monitor.ranks` and `hookscope.monitor.deferred`.
        keep_wrappers: keep wrapper components (``module.``, ``_orig_mod.``,
            ``_fsdp_wrapped_module.``) in names; by default names match the
            unwrapped model.
        every: record full statistics every ``every``-th step only. The other
            steps are still checked for NaN/Inf: the hooks take one exact
            NaN/Inf count per tensor (one ``sum`` on CPU) and nothing is kept,
            unless a tensor is not finite; then the step's counts go to
            `results` and the sinks at once (``StepResult.sentinel``), so
            `first_nonfinite` and the ``nonfinite`` alerts are exact at any
            cadence (see `hookscope.monitor.sentinel`).
        sinks: objects with ``write(StepResult)`` and ``close()``, e.g.
            `hookscope.sinks.JsonlSink`, `hookscope.sinks.TensorBoardSink`.
        on_error: the session's policy when a monitor hook raises:
            ``"raise"``, ``"warn"`` or ``"disable"``.
        zeros: which outputs get a zero fraction: ``"activations"``
            (activation modules, where dead units show), ``"all"`` or
            ``"none"`` (free with the CPU kernel; with eager reductions it
            costs 1.5-8x a ``sum``).
        update_ratio: also report ‖Δw‖/‖w‖ per parameter between steps
            (keeps one copy of the parameters).
        fused: on GPUs (and on CPUs without the native kernel), reduce each
            activation in one ``torch.compile``d pass instead of three eager
            ones (a one-time compile of roughly 10-30 s; see
            `hookscope.stats.fused`). CPU tensors use the one-pass C kernel
            of `hookscope.stats.native` whenever it is available.
        keep: keep results in memory for `to_pandas` and `results`; ``False``
            is ``history=0``.
        history: how many recorded steps `results` and `to_pandas` keep (the
            last ones; default `DEFAULT_HISTORY`, 200), so that memory stays
            flat however long the run: about 100-200 bytes per statistic, e.g.
            ~40 MB for 200 steps of ~2,000 statistics. ``None`` keeps every
            step (memory grows with the run). Sinks receive every step.
            Alerts: the last `ALERTS_KEPT` (10,000).
        explode_above, explode_jump, vanish_below, vanish_steps, dead_above:
            alert thresholds (see `hookscope.monitor.alerts`).
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        modules: ModuleSelector = None,
        stats: Sequence[str] | None = None,
        inputs: bool = False,
        outputs: bool = True,
        grads: bool | Grads = True,
        params: bool = True,
        ranks: Ranks = "local",
        every: int = 1,
        sinks: Sequence[Sink] = (),
        on_error: OnError = "warn",
        zeros: ZeroPolicy = "activations",
        update_ratio: bool = False,
        fused: bool = False,
        keep: bool = True,
        history: int | None = DEFAULT_HISTORY,
        explode_above: float = 1e4,
        explode_jump: float = 10.0,
        vanish_below: float = 1e-7,
        vanish_steps: int = 3,
        dead_above: float = 0.99,
        keep_wrappers: bool = False,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise UsageError(f"Monitor needs an nn.Module, got {type(model).__name__}")
        self.model = model
        self.modules = modules
        self.stats = check_stats(stats)
        check_options(every, zeros, on_error, sinks)
        check_ranks(ranks, grads)
        self.inputs, self.outputs, self.params = inputs, outputs, params
        self.grads = grads is not False
        self.grad_mode: Grads = "reduced" if grads == "reduced" else "local"
        self.ranks: Ranks = ranks
        self.keep_wrappers = keep_wrappers
        self._names: dict[str, str] = {}
        #: Clean names already found (`clean_keys`): the same names come back every step.
        self._clean_memo: dict[tuple[Phase, str], str] = {}
        #: `TensorInfo` objects of earlier steps (`merge_entries`): the same come back every step.
        self._infos: dict[InfoKey, TensorInfo] = {}
        self._combiner = RankCombiner(ranks, None, model)
        self.every = every
        self.sinks = list(sinks)
        self._sinks = SinkGroup(self.sinks, on_error)
        self.on_error: OnError = on_error
        self.zeros: ZeroPolicy = zeros
        self.update_ratio = update_ratio
        self.fused = fused
        self.keep = keep
        self.history = check_history(history) if keep else 0
        self.thresholds = Thresholds(
            explode_above, explode_jump, vanish_below, vanish_steps, dead_above
        )
        self._rules = AlertRules(self.thresholds)
        self._session: HookSession | None = None
        self._collector: Collector | None = None
        self._grad_hooks: TensorGradHooks | None = None
        self._step = 0
        self._kept = History(self.history)
        self._pending: DeferredResult | None = None
        self._ratios = UpdateRatios(model)
        self._closed = False
        self._compiled: CompiledSupport | None = None

    # -- lifecycle -----------------------------------------------------------------

    def __enter__(self) -> Monitor:
        self.open()
        return self

    @critical
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @critical
    def open(self) -> Monitor:
        """Attach the hooks (``with Monitor(...)`` does this)."""
        if self._session is not None or self._closed:
            raise UsageError("a Monitor can be opened once; create a new one")
        selected = select_modules(self.model, self.modules, leaves_only=self.modules is None)
        if not selected:
            raise UsageError(nothing_selected(self.model, self.modules))
        plans: dict[str, Plan] = {
            sel.name: plan_for(self.stats, zero_plan(sel.module, self.zeros), fused=self.fused)
            for sel in selected
        }
        ids = {id(sel.module) for sel in selected}
        self._compiled = CompiledSupport(
            self.model, selected, plans,
            inputs=self.inputs, outputs=self.outputs, grads=self.grads, params=self.params,
        )  # fmt: skip
        self._session = session(self.model, on_error=self.on_error, keep_wrappers=True).__enter__()
        # Nothing reads the session's in-graph call counts; each costs compile time
        # (1-2.5 s of a SmallCNN warm-up, benchmarks/README.md). Eager calls still count.
        self._session.count_traced = False
        self._session.stale_checked = True  # CompiledSupport warned already
        try:
            self._attach(selected, plans, lambda _name, module: id(module) in ids)
        except BaseException:
            self._detach()
            raise
        if setup_interrupted():  # `with` would not call __exit__
            self._detach()
        return self

    def _attach(self, selected: list[Any], plans: dict[str, Plan], selector: Any) -> None:
        assert self._session is not None
        if self.grads:
            self._grad_hooks = TensorGradHooks(self._session)
        options = CollectOptions(self.inputs, self.outputs, self.grads, plans)
        collector = Collector(options, self._grad_hooks)
        assert self._compiled is not None
        collector.traced = self._compiled.traced
        names = {} if self.keep_wrappers else clean_names(self.model)
        # No wrapper anywhere: every name is already clean (`clean_keys` then does nothing).
        self._names = {} if all(raw == clean for raw, clean in names.items()) else names
        self._clean_memo = {}
        if self.params and self.grad_mode == "reduced":
            reader = GradReader(self.model, collector, self.on_error)
            collector.after_backward = reader.schedule
            self._combiner = RankCombiner(self.ranks, reader, self.model)
        if self._grad_hooks is not None:
            for sel in selected:
                reg = self._grad_hooks.registration(sel.names, sel.module, collector.on_grad)
                collector.grad_regs[sel.name] = reg
        self._session.add_forward_pre_hook(collector.on_forward_pre, selector)
        self._session.add_forward_hook(collector.on_forward, selector)
        if self.params:
            self._session.add_grad_hook(collector.on_param_grad)
        self._collector = collector

    @critical
    def close(self) -> None:
        """Finish a step left open, remove every hook, close the sinks (idempotent).

        The step may be cut short by Ctrl-C; the hooks are removed whatever happens.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._finish_open_step()
        finally:
            self._detach()
            self._sinks.close()

    @interruptible
    def _finish_open_step(self) -> None:
        self._settle()
        if self.pending:
            self._finish_step()
            self._settle()

    @critical
    def _detach(self) -> None:
        """Remove every hook (safe to repeat)."""
        if self._grad_hooks is not None:
            self._grad_hooks.remove()
        if self._compiled is not None:
            self._compiled.traced.close()
        if self._session is not None:
            self._session.close()

    # -- steps ---------------------------------------------------------------------

    def step(self, step: int | None = None) -> StepResult | None:
        """Close the current step: one transfer to the host, records, alerts, sinks.

        Args:
            step: the number this step gets in records, alerts and sinks, e.g. a
                trainer's global step (the next step is ``step + 1``); default:
                one more than the previous step (0 first).

        Returns:
            The step's results, or None when the step was not recorded
            (``every``). With ``ranks="reduce"`` under torch.distributed a
            `hookscope.monitor.deferred.DeferredResult`: reading its records
            waits for the step's all-reduces.
        """
        if self._collector is None or self._closed:
            raise UsageError(
                "Monitor.step() needs an open monitor: use 'with Monitor(model) as mon:'"
            )
        if step is not None:
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                raise UsageError(f"step must be an int >= 0, got {step!r}")
            self._step = step
        return self._finish_step()

    def _finish_step(self) -> StepResult | None:
        assert self._collector is not None
        self._settle()
        collector = self._collector
        entries = collector.take()
        index, recorded = self._step, collector.recording and not collector.checking
        self._step += 1
        record_next = self._step % self.every == 0
        collector.recording, collector.checking = True, not record_next
        if self._grad_hooks is not None:
            self._grad_hooks.prune()
        ratios = self._ratios.take(snapshot=record_next) if self.update_ratio else []
        if not recorded:
            return self._checked_step(index, entries)
        fetch([entry.red for entry in entries] + [red for _, red in ratios])
        assert self._compiled is not None
        missing = self._compiled.check(index, entries)
        merged, infos = merge_entries(entries, self._infos)
        first = find_nonfinite(index, entries) if self._kept.first is None else None
        # under torch.distributed: the step's collectives start here, completed later
        exchange = self._combiner.start(index, merged, first, self._kept.first is None)
        rank, world_size = dist.where()
        known = {"step": index, "tensors": tuple(clean_keys({}, infos, None, self._names, self._clean_memo)[1]),
                 "rank": rank, "world_size": world_size, "ranks": self.ranks,
                 "missing": missing}  # fmt: skip
        complete = partial(self._complete, exchange, merged, ratios, known)
        if exchange.done:
            result = complete()
            self._publish(result)
            return result
        self._pending = DeferredResult.pending(complete, self._publish, **known)
        return self._pending

    def _complete(
        self,
        exchange: Exchange,
        merged: dict[Key, Reduction],
        ratios: list[tuple[str, Reduction]],
        known: dict[str, Any],
    ) -> StepResult:
        first = exchange.finish()  # waits for the step's collectives, if any
        merged, _, first = clean_keys(merged, (), first, self._names, self._clean_memo)
        found = summaries(merged, self.stats)
        ratio_records = [
            Record("param", name, "param", "update_ratio", float(red.sum or 0.0))
            for name, red in ratios
        ]
        if self._kept.first is None:
            self._kept.first = first
        alerts = self._rules.check_found(known["step"], found)  # update ratios have no rule
        self._kept.alerts.extend(alerts)
        return StepResult.of(found, ratio_records, alerts=tuple(alerts),
                             first_nonfinite=self._kept.first_nonfinite(), **known)  # fmt: skip

    def _checked_step(self, index: int, entries: list[Entry]) -> StepResult | None:
        """A step not recorded (``every``): its NaN/Inf counts checked (`hookscope.monitor.sentinel`).

        None unless a tensor was not finite; then a ``sentinel=True`` result
        with their counts, handed to the sinks at once. Its first NaN/Inf is
        this rank's own (no collective runs on unrecorded steps).
        """
        found = check_step(
            index, entries, self._rules, searching=self._kept.first_nonfinite() is None,
            names=self._names, memo=self._clean_memo, infos=self._infos,
        )  # fmt: skip
        if found is None:
            return None
        rank, world_size = dist.where()
        if found.first is not None:
            self._kept.checked_first = replace(found.first, rank=rank)
        self._kept.alerts.extend(found.alerts)
        result = StepResult.of(
            found.found, alerts=tuple(found.alerts), first_nonfinite=self._kept.first_nonfinite(),
            step=index, tensors=tuple(found.tensors), rank=rank, world_size=world_size,
            ranks="local", missing=(), sentinel=True,
        )  # fmt: skip
        self._publish(result)
        return result

    def _publish(self, result: StepResult) -> None:
        self._kept.add(result)
        self._sinks.write(result)

    def _settle(self) -> None:
        """Complete the previous step if its collectives are still pending (`DeferredResult`)."""
        pending, self._pending = self._pending, None
        if pending is not None and not pending.failed:  # a failure was raised to its reader
            pending.settle()

    def pause(self) -> None:
        """Drop the step in progress and record nothing until the next `step`.

        ``hookscope run --monitor`` calls it in a forked child, which must not
        record into its parent's files.
        """
        self._pending = None  # its collectives belong to the parent's process group
        if self._collector is not None:
            self._collector.recording = False
            self._collector.take()

    # -- results -------------------------------------------------------------------

    @property
    def step_index(self) -> int:
        """The number of the step in progress (0 before the first `step`)."""
        return self._step

    @property
    def pending(self) -> bool:
        """True when the step in progress holds statistics not yet handed over by `step`."""
        collector = self._collector
        return collector is not None and bool(
            collector.entries or (collector.traced is not None and collector.traced.used)
        )

    @property
    def results(self) -> list[StepResult]:
        """The last ``history`` recorded steps' results, oldest first (see ``history``)."""
        self._settle()
        return list(self._kept.results)

    @property
    def results_dropped(self) -> int:
        """How many recorded steps left `results` because of ``history`` (0 in a short run)."""
        self._settle()
        return self._kept.dropped

    @property
    def alerts(self) -> list[Alert]:
        """The alerts so far, in order (the last `ALERTS_KEPT`; sinks get every one)."""
        self._settle()
        return list(self._kept.alerts)

    @property
    def first_nonfinite(self) -> NonFinite | None:
        """The first module that made a NaN/Inf (forward or backward), or None.

        Exact at any ``every``: unrecorded steps are checked for NaN/Inf too.
        """
        self._settle()
        return self._kept.first_nonfinite()

    @property
    def errors(self) -> list[HookFailure]:
        """Exceptions the monitor's hooks raised under ``on_error="warn"|"disable"``."""
        return [] if self._session is None else list(self._session.errors)

    def to_pandas(self) -> Any:
        """Tidy ``DataFrame`` of `results`: columns ``step, phase, module, tensor, stat, value, rank``."""
        from hookscope.sinks.pandas import to_frame

        self._settle()
        return to_frame(self._kept.results)

    # -- display -------------------------------------------------------------------

    def _state(self) -> str:
        if self._closed:
            return "closed"
        return "open" if self._session is not None else "not opened"

    def __repr__(self) -> str:
        return (
            f"<Monitor {type(self.model).__name__}: {self._state()}, "
            f"{len(self.results)} step(s) kept, {len(self.alerts)} alert(s)>"
        )

    def _repr_html_(self) -> str:
        results, first = self.results, self.first_nonfinite
        state = [
            ("model", type(self.model).__name__),
            ("state", self._state()),
            ("steps kept", len(results)),
            ("next step", self.step_index),
            ("statistics", ", ".join(self.stats)),
        ]
        args = (
            state,
            asdict(results[-1]) if results else None,
            [asdict(alert) for alert in self.alerts],
            None if first is None else asdict(first),
        )
        return monitor_html(*args) if self.keep else monitor_html(*args, "keep=False: no step kept")
