"""`summary`: validate options, run the forward (meta first), build the result.

Model state is the caller's: every module's train/eval flag is put back,
parameters and buffers are only ever replaced by stand-ins that
`hookscope.summary.swap.stand_ins` swaps back, and the session that
holds the shape hooks removes them — all also when the forward raises or
a Ctrl-C lands anywhere (`hookscope._interrupts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from hookscope import dist
from hookscope._borrow import borrowing
from hookscope._interrupts import critical
from hookscope.errors import ForwardError, UsageError
from hookscope.hooks.compiled import unwrap_compiled
from hookscope.modtree import walk, walked
from hookscope.names import CleanNames
from hookscope.summary.collect import Collected, iter_tensors, run_forward, shapes_of
from hookscope.summary.inputs import (
    InputSize,
    all_meta,
    make_tensor,
    model_device,
    normalize_dtypes,
    normalize_sizes,
    to_device,
)
from hookscope.summary.params import ModuleParams, count_params
from hookscope.summary.records import SummaryRow, UncountedOp
from hookscope.summary.result import ModelSummary

_META = torch.device("meta")


def summary(
    model: nn.Module,
    *inputs: Any,
    input_size: InputSize | None = None,
    dtypes: torch.dtype | Sequence[torch.dtype] | None = None,
    device: str | torch.device | None = None,
    depth: int | None = None,
    keep_wrappers: bool = False,
    **kwargs: Any,
) -> ModelSummary:
    """Summarise ``model``: rows per module call, exact parameters, dispatch-level MACs.

    The forward runs once, in eval mode and under ``no_grad``. By default
    (``device=None`` or ``"auto"``) it runs on meta tensors — no compute, no
    memory — and, when an op needs real data (``.item()``, data-dependent
    shapes), again on the model's own device; ``fallback_reason`` says why.
    A model holding FSDP modules runs on its own device only (its forward
    all-gathers the parameter shards: a collective every rank must enter).

    Args:
        model: the module to summarise; left exactly as it was.
        *inputs: positional inputs to ``forward`` (tensors, dicts, lists, ...).
        input_size: instead of ``inputs``: one shape ``(1, 3, 224, 224)`` or
            a list of shapes, one per positional input.
        dtypes: dtype of each ``input_size`` input (one dtype applies to all);
            integer dtypes get tensors of ones (valid token ids).
        device: ``None``/``"auto"`` (meta, falling back to a real run),
            ``"meta"`` (meta only) or a real device such as ``"cpu"``.
        depth: deepest row depth to list (root is 0); MACs of deeper calls
            still count in their ancestors and the totals. None lists all.
        keep_wrappers: list wrapper modules (DDP, FSDP1, checkpoint wrappers)
            as rows of their own and keep their components in names; by
            default rows are named and nested as in the unwrapped model.
        **kwargs: keyword inputs to ``forward`` (``input_ids=...``).

    Returns:
        A `ModelSummary`; ``str()`` is the table, ``to_dict()`` is JSON-ready.

    Raises:
        UsageError: a bad option (the message shows the value).
        ForwardError: the forward raised; the message names the module chain
            it raised in and the modules that had run.
        DistributedError: the forward is a collective (an FSDP model) and some
            ranks did not call ``summary`` within ``$HOOKSCOPE_COLLECTIVE_TIMEOUT`` s.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"summary() needs an nn.Module, got {type(model).__name__}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise UsageError(f"depth must be a non-negative integer or None, got {depth!r}")
    # a torch.compile wrapper: summarise the model it holds (rows without "_orig_mod.",
    # and no compile of a forward that only measures)
    model = unwrap_compiled(model)
    why = dist.collective_reason(model, backward=False)
    if why is not None:  # the forward is a collective (FSDP): meet the other ranks first
        dist.rendezvous("hookscope.summary()", why)
    target = _parse_device(device)
    if target is None and dist.gathers_parameters(model):
        target = model_device(model)  # FSDP hooks gather real shards: no meta run
    args = _build_args(inputs, input_size, dtypes, kwargs, target)
    # borrowing: grad mode and torch's mode stacks come back also after a Ctrl-C;
    # walked: names, hooks, stand-ins and totals share one walk of the tree
    with borrowing(), walked(model):
        flags = [(module, module.training) for _, module in walk(model)]
        try:
            _eval(model, flags)
            collected, used, reason = _run(model, args, kwargs, target, input_size is not None)
        finally:
            _restore(flags)
        names = CleanNames(model, keep_wrappers=keep_wrappers)
        return _build(model, (args, kwargs), collected, used, reason, depth, names)


@critical
def _eval(model: nn.Module, flags: list[tuple[nn.Module, bool]]) -> None:
    """``model.eval()``; the flags set directly where no module overrides ``train``."""
    if any(kind.train is not nn.Module.train for kind in {type(module) for module, _ in flags}):
        model.eval()
        return
    for module, _ in flags:
        module.__dict__["training"] = False  # what train(False) does, without __setattr__


@critical
def _restore(flags: list[tuple[nn.Module, bool]]) -> None:
    """Put every module's train/eval flag back (directly where ``__setattr__`` is nn.Module's)."""
    kinds = {type(module) for module, _ in flags}
    if all(kind.__setattr__ is nn.Module.__setattr__ for kind in kinds):
        for module, training in flags:
            module.__dict__["training"] = training
        return
    for module, training in flags:
        module.training = training


def _parse_device(device: str | torch.device | None) -> torch.device | None:
    if device is None or device == "auto":
        return None
    try:
        parsed = torch.device(device)
        torch.empty(0, device=parsed)  # is it usable here?
    except (RuntimeError, TypeError, AssertionError) as exc:
        raise UsageError(
            f"device must be 'auto', 'meta' or a usable torch device, got {device!r} ({exc})"
        ) from None
    return parsed


def _build_args(
    inputs: tuple[Any, ...],
    input_size: InputSize | None,
    dtypes: torch.dtype | Sequence[torch.dtype] | None,
    kwargs: dict[str, Any],
    target: torch.device | None,
) -> tuple[Any, ...]:
    if input_size is None:
        if dtypes is not None:
            raise UsageError(f"dtypes={dtypes!r} needs input_size")
        if not inputs and not kwargs:
            raise UsageError("give example inputs or input_size=(...) to summary()")
        return inputs
    if inputs:
        raise UsageError("give either positional inputs or input_size, not both")
    shapes = normalize_sizes(input_size)
    kinds = normalize_dtypes(dtypes, len(shapes))
    device = target if target is not None else _META
    return tuple(make_tensor(s, d, device) for s, d in zip(shapes, kinds, strict=True))


def _run(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    target: torch.device | None,
    sized: bool,
) -> tuple[Collected, torch.device, str | None]:
    if target is not None:
        return _forward(model, args, kwargs, target), target, None
    try:
        return _forward(model, args, kwargs, _META), _META, None
    except ForwardError as exc:
        if all_meta(model):
            raise
        reason = f"{type(exc.__cause__).__name__}: {exc.__cause__}"
    real = model_device(model)
    if sized:  # inputs built from input_size: real ones now
        args = tuple(make_tensor(tuple(a.shape), a.dtype, real) for a in args)
    if any(t.is_meta for t in _tensors(args, kwargs)):
        raise UsageError(
            f"the meta run failed ({reason}) and the inputs are meta tensors; "
            "pass real inputs or input_size, or use device='cpu'"
        )
    return _forward(model, args, kwargs, real), real, reason.splitlines()[0][:300]


def _tensors(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    return list(iter_tensors((args, kwargs)))


def _forward(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], device: torch.device
) -> Collected:
    if device.type != "meta" and any(t.is_meta for t in (*model.parameters(), *model.buffers())):
        raise UsageError(f"the model has meta parameters; it cannot run on device={str(device)!r}")
    return run_forward(model, to_device(args, device), to_device(kwargs, device), device)


def _rows(
    per_module: dict[int, ModuleParams], collected: Collected, depth: int | None, names: CleanNames
) -> tuple[SummaryRow, ...]:
    empty = ModuleParams(0, 0, "")
    rows: list[SummaryRow] = []
    module_name = names.module
    for rec in collected.records:
        if rec.module_id in names.wrappers:
            continue  # the row of the module it wraps has the same name and numbers
        level = rec.depth - names.wrappers_above(rec.name) if names.wrappers else rec.depth
        if depth is not None and level > depth:
            continue
        own, total, trainable = per_module.get(rec.module_id, empty)
        # positional, in field order (index, name, type, depth, call, input and output
        # shapes, own params, params, trainable, macs, own macs, output bytes, leaf):
        # one row per module call, and keywords cost a fifth more
        rows.append(
            SummaryRow(
                len(rows),
                module_name(rec.name),
                rec.type_name,
                level,
                rec.call,
                rec.input_shapes,
                rec.output_shapes,
                own,
                total,
                trainable,
                rec.macs,
                rec.own_macs,
                rec.output_bytes,
                not rec.children,
            )
        )
    return tuple(rows)


def _build(
    model: nn.Module,
    inputs: Any,
    collected: Collected,
    device: torch.device,
    reason: str | None,
    depth: int | None,
    names: CleanNames,
) -> ModelSummary:
    counter = collected.counter
    totals, per_module = count_params(model)
    ran = {rec.module_id for rec in collected.records}
    uncounted = sorted(counter.uncounted.items(), key=lambda kv: (kv[1].category, kv[0]))
    return ModelSummary(
        model=type(model).__name__,
        device=str(device),
        fallback_reason=reason,
        depth=depth,
        input_shapes=shapes_of(inputs),
        output_shapes=shapes_of(collected.output),
        rows=_rows(per_module, collected, depth, names),
        total_params=totals.params,
        trainable_params=totals.trainable,
        frozen_params=totals.frozen,
        param_bytes=totals.param_bytes,
        params_by_dtype=totals.params_by_dtype,
        param_bytes_by_dtype=totals.param_bytes_by_dtype,
        buffers=totals.buffers,
        buffer_bytes=totals.buffer_bytes,
        macs=counter.total,
        macs_by_op=dict(sorted(counter.by_op.items())),
        uncounted_ops=tuple(UncountedOp(op, t.calls, t.category) for op, t in uncounted),
        activation_bytes=sum(r.output_bytes for r in collected.records if not r.children),
        not_run=tuple(
            names.module(name)
            for name, m in walk(model)
            if id(m) not in ran and name not in collected.called_directly and not _container(m)
        ),
        called_directly=tuple(dict.fromkeys(map(names.module, collected.called_directly))),
    )


def _container(module: nn.Module) -> bool:
    # ModuleList, ModuleDict, ParameterList, a bare nn.Module holder: no forward
    # of their own, so never called by design; their children are what runs.
    return type(module).forward is nn.Module.forward
