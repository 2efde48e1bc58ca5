"""`compare` and `record`: the public entry points of the compare room."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, get_args

from torch import nn

from hookscope._borrow import borrowing
from hookscope.compare.match import Match, Matcher, check_match, rows
from hookscope.compare.recording import DEFAULT_MAX_BYTES, CallRecord, Recording
from hookscope.compare.records import Mode
from hookscope.compare.result import Comparison
from hookscope.compare.safety import rng_state
from hookscope.compare.sides import LossFn, as_inputs, recorded_inputs, run, side_a, side_b
from hookscope.errors import UsageError

_MODES = get_args(Mode)
_ISOLATE_BACKWARD = (
    "backward=True is not supported with mode='isolate': isolate mode feeds B's modules "
    "detached copies of A's inputs, which cuts B's autograd graph at every module, so a "
    "backward would reach only the last modules and the gradient rows would be wrong. "
    "Run mode='isolate' without backward to find the module whose forward introduces the "
    "error (a wrong weight shows there too), and backward=True with mode='propagate' to "
    "see how the gradients differ"
)


def _tolerance(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise UsageError(f"{name} must be a non-negative number, got {value!r}")
    if math.isinf(value):
        raise UsageError(f"{name} must be finite, got {value!r}")
    return float(value)


def _budget(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"max_bytes must be a non-negative int or None, got {value!r}")
    return value


def compare(
    model_a: nn.Module | Recording | str | Path,
    model_b: Any,
    *inputs: Any,
    backward: bool = False,
    mode: Mode = "propagate",
    match: Match = "name",
    rtol: float = 1e-3,
    atol: float = 1e-5,
    loss_fn: LossFn | None = None,
    max_bytes: int | None = None,
    **kwargs: Any,
) -> Comparison:
    """Run two models (or a model and a recording) on the same inputs and compare every module.

    Example::

        cmp = hookscope.compare(model, torch.autocast("cpu", dtype=torch.bfloat16), x,
                                mode="isolate")
        print(cmp)            # the culprit first, then every module
        cmp.culprit.label     # the first module whose own error is outside rtol/atol

    Both models are run with the session hooks of `hookscope.compare.recorder`
    (a forward pre-hook ``(name, module, args, kwargs)`` and a forward hook
    ``(name, module, args, output)`` on every module). Neither model's
    parameters, buffers, training flags, ``.grad`` nor the RNG state change;
    both runs start from the same RNG state (dropout draws the same masks) and
    run under ``torch.no_grad()`` unless ``backward=True``.

    Args:
        model_a: the reference: a model, a `Recording` or a ``.safetensors`` path.
        model_b: what to compare with: a model; a `Recording` or ``.safetensors``
            path; a ``torch.dtype`` (a copy of A cast to it, floating inputs
            cast too); a device (a copy of A moved there); a
            ``torch.autocast(...)`` (A run under it); or a callable
            ``model_a -> model_b`` such as ``lambda m: torch.compile(m)``.
        *inputs: positional model inputs (default: those of a recording on side A or B).
        backward: also compare the gradient w.r.t. every module output, after
            a backward of ``loss_fn(output)`` (default: the sum of all outputs).
            Propagate mode only (isolate mode cuts B's autograd graph at every
            module; the error says what to do instead).
        mode: ``"propagate"`` (B runs on its own; errors accumulate downstream)
            or ``"isolate"`` (teacher forcing: each module of B gets A's inputs
            to that module, so a row's error is the module's own).
        match: ``"name"`` (qualified name without wrapper prefixes, call by
            call), ``"order"`` (n-th call with n-th call) or a dict
            ``{name in B: name in A}``.
        rtol: relative tolerance of ``frac_outside`` and the culprit.
        atol: absolute tolerance.
        loss_fn: ``loss_fn(output) -> scalar tensor`` for ``backward=True``.
        max_bytes: budget for the copies each run keeps (None: no limit).
        **kwargs: keyword model inputs.

    Returns:
        A `Comparison`: ``.rows`` in execution order, ``.culprit``,
        ``.unmatched_a`` / ``.unmatched_b``, ``.render(fmt)``.

    Raises:
        UsageError: a bad option value or an impossible combination.
        ForwardError: a model raised while running.
        CaptureOverflowError: the copies would exceed ``max_bytes``.
    """
    with borrowing():  # making B (model.to(dtype)) runs under no_grad too
        return _compare(model_a, model_b, inputs, backward, mode, match, rtol, atol, loss_fn,
                        max_bytes, kwargs)  # fmt: skip


def _compare(
    model_a: nn.Module | Recording | str | Path,
    model_b: Any,
    inputs: tuple[Any, ...],
    backward: bool,
    mode: Mode,
    match: Match,
    rtol: float,
    atol: float,
    loss_fn: LossFn | None,
    max_bytes: int | None,
    kwargs: dict[str, Any],
) -> Comparison:
    if mode not in _MODES:
        raise UsageError(f"mode must be one of {_MODES}, got {mode!r}")
    matching = check_match(match)
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    budget = _budget(max_bytes)
    a = side_a(model_a)
    b = side_b(model_b, a)
    if mode == "isolate" and b.model is None:
        raise UsageError("mode='isolate' runs B on A's inputs; B must be a model, not a recording")
    if mode == "isolate" and backward:
        raise UsageError(_ISOLATE_BACKWARD)
    given = as_inputs(inputs, kwargs)
    if not inputs and not kwargs:
        source = a.recording or b.recording
        if source is None:
            raise UsageError("compare() needs the model inputs (or a recording that holds them)")
        given = recorded_inputs(source)
    rng = rng_state()
    options: dict[str, Any] = {"backward": backward, "loss_fn": loss_fn, "max_bytes": budget}
    if a.recording is not None:
        rec_a = a.recording
    else:
        rec_a, _ = run(a, given, rng, record_inputs=mode == "isolate", **options)
    if mode == "isolate" and not any(c.inputs for c in rec_a.calls):
        raise UsageError("mode='isolate' needs A's module inputs; this recording has none")
    forced: set[int] = set()
    if b.recording is not None:
        rec_b = b.recording
    else:
        teacher = _teacher(rec_a, matching) if mode == "isolate" else None
        rec_b, forced = run(b, given, rng, record_inputs=False, teacher=teacher, **options)
    table, missing_a, missing_b = rows(
        rec_a, rec_b, matching, rtol=rtol, atol=atol, isolated=forced
    )
    return Comparison(mode, table, missing_a, missing_b, rtol, atol, a.label, b.label)


def _teacher(reference: Recording, match: Match) -> Any:
    matcher = Matcher(reference, match)

    def teacher(name: str, call: int, start: int) -> CallRecord | None:
        return matcher.partner(name, call, start)

    return teacher


def record(
    model: nn.Module,
    *inputs: Any,
    path: str | Path | None = None,
    backward: bool = False,
    loss_fn: LossFn | None = None,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    **kwargs: Any,
) -> Recording:
    """Record every module's inputs and outputs (and output gradients) in one run.

    Example::

        hookscope.record(model, x, path="runs/before.safetensors")
        # ... change the code, upgrade a library, move to another machine ...
        hookscope.compare("runs/before.safetensors", model, x).culprit

    Uses the same session hooks as `compare`; the model's state and the RNG
    state are left as they were. The file format is described in
    `hookscope.compare.recording` and the README.

    Args:
        model: the model to run.
        *inputs: positional model inputs.
        path: where to save it (``.safetensors``); None keeps it in memory only.
        backward: also record the gradient w.r.t. every module output after a
            backward of ``loss_fn(output)`` (default: the sum of all outputs).
        loss_fn: ``loss_fn(output) -> scalar tensor``.
        max_bytes: budget for all recorded tensors (default 1 GiB; None: no
            limit); exceeding it raises `CaptureOverflowError` before anything
            is written.
        **kwargs: keyword model inputs.

    Returns:
        The `Recording` (also saved when ``path`` is given).
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"record() needs an nn.Module, got {type(model).__name__}")
    budget = _budget(max_bytes)
    side = side_a(model)
    with borrowing():
        recording, _ = run(
            side,
            as_inputs(inputs, kwargs),
            rng_state(),
            record_inputs=True,
            backward=backward,
            loss_fn=loss_fn,
            max_bytes=budget,
        )
    if path is not None:
        recording.save(path)
    return recording
