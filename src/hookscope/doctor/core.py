"""`doctor`: run the model once under observation and explain every hook that did not fire."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from hookscope import dist
from hookscope._borrow import RandomState, borrowing
from hookscope._interrupts import critical
from hookscope.doctor.diagnose import RunFacts, diagnose, replaced_record
from hookscope.doctor.naming import clean_bypasses, clean_hooks
from hookscope.doctor.records import HookRecord, ReasonCode
from hookscope.doctor.report import DoctorReport
from hookscope.errors import ForwardError, UsageError
from hookscope.hooks.bypass import BypassDetector
from hookscope.hooks.describe import callable_source
from hookscope.hooks.firing import FiringCounter
from hookscope.hooks.session import active_sessions
from hookscope.names import CleanNames


def doctor(
    model: nn.Module,
    *inputs: Any,
    backward: bool = False,
    keep_wrappers: bool = False,
    **kwargs: Any,
) -> DoctorReport:
    """Run ``model(*inputs, **kwargs)`` once and explain every hook that did not fire.

    Every hook on the model is counted, whoever registered it (module forward,
    forward-pre, backward and backward-pre hooks; tensor hooks on parameters
    and buffers; global module hooks), and every module's ``forward`` is
    watched for direct calls that skip ``__call__``. Hooks that an active
    `hookscope.session` put on modules that have since been replaced are
    reported too. The model's parameters, gradients and buffers are left as
    they were (BatchNorm running statistics and ``.grad`` are restored; with
    ``backward=True`` the run's gradients never add into the user's), and so
    are the random generators (torch's, Python's, NumPy's) and torch's grad
    mode, also when a Ctrl-C lands anywhere inside.

    Args:
        model: the model, as is (train or eval mode is yours to choose).
        *inputs: positional inputs for the forward.
        backward: also run backward from a scalar made of the outputs (the
            sum of every floating-point output tensor that requires grad).
        keep_wrappers: report names as the wrapped model has them
            (``module.fc``, ``_fsdp_wrapped_module.fc``, ``_orig_mod.fc``); by
            default they match the unwrapped model (see `hookscope.names`).
        **kwargs: keyword inputs for the forward.

    Returns:
        A `DoctorReport`; ``str(report)`` is a table, ``report.to_dict()`` JSON-able data.

    Raises:
        UsageError: ``model`` is not an ``nn.Module`` or ``backward`` not a bool.
        ForwardError: the model raised; the message names the modules that had run.
        DistributedError: on a DDP / FSDP model (whose forward or backward are
            collectives) some ranks did not call the doctor within
            ``$HOOKSCOPE_COLLECTIVE_TIMEOUT`` seconds; the message names them.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"doctor() needs an nn.Module, got {type(model).__name__}")
    if not isinstance(backward, bool):
        raise UsageError(f"backward must be True or False, got {backward!r}")
    why = dist.collective_reason(model, backward)
    if why is not None:  # every rank must run it: meet first, so one left alone fails fast
        dist.rendezvous(f"hookscope.doctor(backward={backward})", why)
    replaced = [(reg, reg.calls) for s in active_sessions(model) for reg in s.detached()]
    contexts = _contexts(model)
    detector = BypassDetector(model, policy="record", track=True)
    with borrowing():  # grad mode and torch's mode stacks come back, also after Ctrl-C
        saved = _Saved()
        try:
            saved.take(model)
            with FiringCounter(model) as counter:
                try:
                    detector.attach(lambda _name, module: id(module) not in contexts)
                    blocked = _run(model, detector, inputs, kwargs, backward)
                finally:
                    detector.detach()
        finally:
            saved.restore()
    modules = dict(model.named_modules(remove_duplicate=False))
    facts = RunFacts(
        activity=detector.activity,
        bypasses=detector.records,
        contexts=contexts,
        modules=modules,
        backward=backward,
        backward_blocked=blocked,
    )
    hooks: list[HookRecord] = [diagnose(entry, facts) for entry in counter.hooks]
    for reg, before in replaced:
        now = modules.get(reg.name)
        context = None if now is None else contexts.get(id(now))
        source = callable_source(reg.hook)
        fired = reg.calls - before
        hooks.append(replaced_record(reg.names, reg.kind, reg.hook_name, source, fired, context))
    executed = sum(1 for m in set(map(id, modules.values())) if m in detector.activity)
    names = CleanNames(model, keep_wrappers=keep_wrappers)
    return DoctorReport(
        model=type(model).__name__,
        hooks=clean_hooks(hooks, names),
        bypasses=clean_bypasses(detector.records, names),
        backward=backward,
        modules_executed=executed,
        modules_total=len({id(m) for m in modules.values()}),
    )


def _run(
    model: nn.Module,
    detector: BypassDetector,
    inputs: tuple[Any, ...],
    kwargs: dict[str, Any],
    backward: bool,
) -> str | None:
    """Forward (and backward); returns why backward could not run, or None."""
    try:
        output = model(*inputs, **kwargs)
    except Exception as exc:
        ran = [n or "(root)" for n, m in model.named_modules() if id(m) in detector.activity]
        shown = ", ".join(ran[-5:]) or "none"
        raise ForwardError(
            f"the model raised {type(exc).__name__}: {exc} "
            f"(modules that ran, last 5 of {len(ran)}: {shown})"
        ) from exc
    if not backward:
        return None
    tensors = [
        t for t in _tensors(output) if t.requires_grad and (t.is_floating_point() or t.is_complex())
    ]
    if not tensors:
        return "the model's outputs do not require grad, so backward could not run"
    loss = torch.stack(
        [t.real.float().sum() if t.is_complex() else t.float().sum() for t in tensors]
    )
    with warnings.catch_warnings():
        # The report explains hooks itself; PyTorch's note on full backward hooks
        # whose inputs need no grad is noise here.
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        loss.sum().backward()
    return None


def _tensors(value: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 5 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth + 1)
    elif depth < 5 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item, depth + 1)


def _contexts(model: nn.Module) -> dict[int, tuple[ReasonCode, str]]:
    """Modules inside TorchScript or compiled modules, with the outermost such module."""
    found: dict[int, tuple[ReasonCode, str]] = {}
    compiled_type = getattr(getattr(torch, "_dynamo", None), "OptimizedModule", None)
    for name, module in model.named_modules():
        if id(module) in found:
            continue
        kind: ReasonCode | None = None
        if isinstance(module, torch.jit.ScriptModule):
            kind = "torchscript"
        elif (compiled_type is not None and isinstance(module, compiled_type)) or getattr(
            module, "_compiled_call_impl", None
        ) is not None:
            kind = "compiled"
        if kind is not None:
            for sub in module.modules():
                found.setdefault(id(sub), (kind, name))
    return found


class _Saved:
    """What the doctor's run may change: buffer values, ``.grad``, the RNG state.

    `take` moves each ``.grad`` aside (the run's backward then makes fresh
    ones instead of adding into the user's) and `restore` puts it back, so
    gradients are the user's, bit for bit. Both run to their end under Ctrl-C.
    """

    def __init__(self) -> None:
        self.buffers: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.grads: list[tuple[nn.Parameter, torch.Tensor | None]] = []
        self.rng: RandomState | None = None

    @critical
    def take(self, model: nn.Module) -> None:
        self.rng = RandomState.take()
        self.buffers = [(b, b.detach().clone()) for b in model.buffers()]
        for param in model.parameters():
            self.grads.append((param, param.grad))
            param.grad = None

    @critical
    def restore(self) -> None:
        with torch.no_grad():
            for buffer, copy in self.buffers:
                if buffer.shape == copy.shape:
                    buffer.copy_(copy)
        for param, grad in self.grads:
            param.grad = grad
        if self.rng is not None:
            self.rng.restore()
