"""What each side of a comparison is, and how to run it.

Side B can be given as a model, a recording (or the path of one), a dtype
(B is a copy of A cast to it), a device (a copy moved there), a
``torch.autocast`` object (A itself run under it), or a callable that makes B
from A (``lambda m: torch.compile(m)``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.compare.compiled import compiled_label, compiled_run, quiet_torch_deprecations
from hookscope.compare.recorder import Recorder, Teacher, call_inputs, flatten
from hookscope.compare.recording import Recording, load_recording
from hookscope.compare.safety import set_rng_state, untouched
from hookscope.errors import (
    CaptureOverflowError,
    ForwardError,
    HookError,
    HookscopeError,
    UsageError,
)
from hookscope.hooks.compiled import compiled_root
from hookscope.hooks.session import session
from hookscope.summary.inputs import map_tensors

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
LossFn = Callable[[Any], torch.Tensor]


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a live model (with settings) or a recording."""

    label: str
    model: nn.Module | None = None
    recording: Recording | None = None
    autocast: torch.autocast | None = None
    dtype: torch.dtype | None = None
    device: torch.device | None = None


def side_a(value: object) -> Side:
    """Side A: a model, a `Recording` or the path of a saved one."""
    if isinstance(value, nn.Module):
        return module_side(model_name(value), value)
    return _recorded(value, "model_a")


def _recorded(value: object, what: str) -> Side:
    if isinstance(value, Recording):
        return Side(f"recording ({value.meta.get('model', '?')})", recording=value)
    if isinstance(value, (str, Path)):
        return Side(Path(value).name, recording=load_recording(value))
    raise UsageError(
        f"{what} must be an nn.Module, a Recording or a .safetensors path, got {type(value).__name__}"
    )


def side_b(value: object, a: Side) -> Side:
    """Side B, made from ``value`` and (for dtypes, devices, autocast, transforms) A's model."""
    if isinstance(value, nn.Module):
        return module_side(model_name(value), value)
    if isinstance(value, Recording) or (isinstance(value, Path) or _is_file_name(value)):
        return _recorded(value, "model_b")
    model = a.model
    if model is None:
        raise UsageError(
            f"model_b={value!r} derives B from model A, but A is a recording; give B as a model"
        )
    if isinstance(value, torch.dtype):
        return Side(f"{model_name(model)} as {value}", model=_copy(model).to(value), dtype=value)
    if isinstance(value, torch.autocast):
        label = f"{model_name(model)} under autocast({value.device}, {value.fast_dtype})"
        return Side(label, model=model, autocast=value)
    if isinstance(value, (str, torch.device)):
        device = _device(value)
        return Side(
            f"{model_name(model)} on {device}", model=_copy(model).to(device), device=device
        )
    if callable(value):
        with quiet_torch_deprecations():  # torch.compile's first call imports inductor
            made = value(model)
        if not isinstance(made, nn.Module):
            raise UsageError(
                f"model_b(model_a) must return an nn.Module, got {type(made).__name__}"
            )
        return module_side(f"{getattr(value, '__name__', 'transform')}({model_name(model)})", made)
    raise UsageError(
        "model_b must be a model, a Recording or .safetensors path, a dtype, a device, "
        f"a torch.autocast or a callable model_a -> model_b; got {value!r}"
    )


def module_side(label: str, model: nn.Module) -> Side:
    """A live model: floating inputs follow its first floating parameter's dtype and device."""
    label = compiled_label(label, model)
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    if param is None:
        return Side(label, model=model)
    return Side(label, model=model, dtype=param.dtype, device=param.device)


def model_name(model: nn.Module) -> str:
    """The class name of a model (of the wrapped one for ``torch.compile``)."""
    return type(getattr(model, "_orig_mod", model)).__name__


def _is_file_name(value: object) -> bool:
    return isinstance(value, str) and value.endswith(".safetensors")


def _device(value: str | torch.device) -> torch.device:
    try:
        return torch.device(value)
    except (RuntimeError, TypeError):
        raise UsageError(f"model_b={value!r} is neither a device nor a .safetensors path") from None


def _copy(model: nn.Module) -> nn.Module:
    try:
        return copy.deepcopy(model)
    except Exception as exc:
        raise UsageError(
            f"cannot copy {type(model).__name__} to change its dtype or device "
            f"({type(exc).__name__}: {exc}); pass model_b as a model instead"
        ) from exc


def convert(value: Any, dtype: torch.dtype | None, device: torch.device | None) -> Any:
    """``value`` with floating tensors cast to ``dtype`` and every tensor moved to ``device``."""

    def move(tensor: torch.Tensor) -> torch.Tensor:
        cast = dtype if dtype is not None and tensor.is_floating_point() else None
        return tensor.to(device=device, dtype=cast) if cast or device else tensor

    return map_tensors(value, move)


def recorded_inputs(recording: Recording) -> Inputs:
    """The model inputs a recording holds, as ``(args, kwargs)``."""
    args: dict[int, torch.Tensor] = {}
    kwargs: dict[str, torch.Tensor] = {}
    for path, tensor in recording.inputs.items():
        kind, _, rest = path.partition("/")
        if kind == "args" and rest.isdigit():
            args[int(rest)] = tensor
        elif kind == "kwargs" and rest and "/" not in rest:
            kwargs[rest] = tensor
        else:
            raise UsageError(f"cannot rebuild the model input {path!r}; pass the inputs explicitly")
    if sorted(args) != list(range(len(args))):
        raise UsageError(f"the recording's positional inputs are incomplete: {sorted(args)}")
    return tuple(args[i] for i in range(len(args))), kwargs


def default_loss(output: Any) -> torch.Tensor:
    """Sum of every floating output tensor that requires grad (the backward's seed)."""
    parts = [t.float().sum() for _, t in flatten(output) if t.requires_grad]
    if not parts:
        raise UsageError("backward=True, but no output of the model requires grad")
    return torch.stack(parts).sum()


def run(
    side: Side,
    inputs: Inputs,
    rng: tuple[torch.Tensor, list[torch.Tensor] | None],
    *,
    record_inputs: bool,
    backward: bool,
    loss_fn: LossFn | None,
    teacher: Teacher | None = None,
    max_bytes: int | None = None,
) -> tuple[Recording, set[int]]:
    """Run ``side``'s model once and record it; returns the recording and forced call ids.

    The model's buffers, training flags, ``.grad`` and the RNG state are put
    back afterwards; the run starts from the RNG state ``rng``.
    """
    model = side.model
    if model is None:
        raise UsageError(f"{side.label} is a recording; it cannot be run")
    args, kwargs = convert(inputs, side.dtype, side.device)
    grad: AbstractContextManager[Any] = nullcontext() if backward else torch.no_grad()
    autocast: AbstractContextManager[Any] = (
        side.autocast if side.autocast is not None else nullcontext()
    )
    # A compiled side, forward only, records from inside one whole-model graph.
    traced = compiled_root(model) is not None and not backward and teacher is None
    with (
        untouched(model),
        compiled_run(model, traced=traced),
        session(model, keep_wrappers=True) as s,
    ):
        set_rng_state(rng)
        # the session's own check is for models called through torch.compile later;
        # this one is called right here (`compiled_run` checks a compiled one)
        s.stale_checked = True
        recorder = Recorder(
            s,
            inputs=record_inputs,
            grads=backward,
            max_bytes=max_bytes,
            teacher=teacher,
            keep_dtype=side.autocast is not None,
            traced=traced,
        )
        try:
            with grad, autocast:
                output = model(*args, **kwargs)
            if traced:
                recorder.finish(call_inputs(args, kwargs))
            if backward:
                (loss_fn or default_loss)(output).backward()
        except HookError as exc:
            if isinstance(exc.__cause__, CaptureOverflowError):
                raise exc.__cause__ from None
            raise
        except HookscopeError:
            raise
        except Exception as exc:
            done = recorder.calls[-1].label if recorder.calls else "nothing"
            raise ForwardError(
                f"{side.label} raised {type(exc).__name__}: {exc} (modules completed up to {done})"
            ) from exc
        finally:
            recorder.close()
    return recorder.recording(), set(recorder.forced)


def as_inputs(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Inputs:
    """Positional and keyword model inputs as one value."""
    return tuple(args), dict(kwargs)
