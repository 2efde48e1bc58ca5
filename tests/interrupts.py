"""Raising Ctrl-C inside a call, and proving the model and torch came back as they were.

`interrupt_at_call` delivers SIGINT the way the operating system does — the
Python handler runs at the next check point — at the start of the n-th Python
function the call runs (a ``sys.setprofile`` counter, so each trial is
reproducible). `interrupt_after` does it after a delay (``setitimer``).
`snapshot` takes everything a call could leave behind as comparable data.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch import nn

from tests.hooks.state import hook_state


def count_calls(fn: Callable[[], Any]) -> int:
    """How many Python functions ``fn()`` starts."""
    seen = [0]

    def profile(_frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            seen[0] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen[0]


def interrupt_at_call(fn: Callable[[], Any], n: int, signum: int = signal.SIGINT) -> bool:
    """Run ``fn()`` with ``signum`` raised at the start of its ``n``-th function; True if interrupted.

    For a signal other than SIGINT, its handler must raise ``KeyboardInterrupt``.
    """
    seen = [0]

    def profile(_frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            seen[0] += 1
            if seen[0] == n:
                sys.setprofile(None)
                _thread.interrupt_main(signum)  # the handler runs at the next check point

    try:
        sys.setprofile(profile)
        try:
            fn()
        finally:
            sys.setprofile(None)
            _settle()
    except KeyboardInterrupt:
        _settle_after_interrupt()
        return True
    return False


def interrupt_after(fn: Callable[[], Any], delay: float) -> bool:
    """Run ``fn()`` with SIGINT raised after ``delay`` seconds; True if interrupted."""
    previous = signal.signal(signal.SIGALRM, lambda *_: _thread.interrupt_main())
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, delay)
            try:
                fn()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                _settle()
        except KeyboardInterrupt:
            _settle_after_interrupt()
            return True
        return False
    finally:
        signal.signal(signal.SIGALRM, previous)


def _settle() -> None:
    """Give a SIGINT noted but not yet handled its check point (a call)."""
    len(())


def _settle_after_interrupt() -> None:
    with contextlib.suppress(KeyboardInterrupt):
        _settle()


def _bits(tensor: torch.Tensor | None) -> Any:
    if tensor is None:
        return None
    if tensor.is_meta:
        return ("meta", tuple(tensor.shape))
    return (
        str(tensor.device),
        tensor.dtype,
        tuple(tensor.shape),
        tensor.stride(),
        tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes(),
    )


def snapshot(model: nn.Module) -> dict[str, Any]:
    """Parameters, buffers, ``.grad``, flags, hooks and torch's global state, as plain data."""
    state: dict[str, Any] = hook_state(model)
    for name, param in model.named_parameters(remove_duplicate=False):
        state[f"param:{name}"] = (id(param), type(param), param.requires_grad, _bits(param))
        state[f"grad:{name}"] = (
            id(param.grad) if param.grad is not None else None,
            _bits(param.grad),
        )
    for name, buffer in model.named_buffers(remove_duplicate=False):
        state[f"buffer:{name}"] = (id(buffer), _bits(buffer))
    for name, module in model.named_modules(remove_duplicate=False):
        state[f"training:{name}"] = module.training
        state[f"forward:{name}"] = module.__dict__.get("forward")
    state.update((f"global:{k}", v) for k, v in global_state().items())
    return state


def global_state() -> dict[str, Any]:
    """Torch's process-wide switches that a call could leave changed."""
    from hookscope import _interrupts

    return {
        "grad": torch.is_grad_enabled(),
        "inference": torch.is_inference_mode_enabled(),
        "dtype": torch.get_default_dtype(),
        "device": torch.get_default_device(),
        "dispatch_modes": torch._C._len_torch_dispatch_stack(),
        "function_modes": torch._C._len_torch_function_stack(),
        "autocast": (torch.autocast.__init__, torch.autocast.__enter__, torch.autocast.__exit__),
        "module_call": nn.Module.__call__,
        "sigint": signal.getsignal(signal.SIGINT),
        "guards": _interrupts._STATE.depth,
        "pending": _interrupts._STATE.pending,
    }


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Keys whose values differ, with both values (short)."""
    keys = sorted(set(before) | set(after))
    return [
        f"{key}: {str(before.get(key))[:160]} -> {str(after.get(key))[:160]}"
        for key in keys
        if before.get(key) != after.get(key)
    ]
