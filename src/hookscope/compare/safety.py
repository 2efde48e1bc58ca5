"""Running a model for a comparison without leaving a trace on it.

`untouched` puts back, on exit, every buffer value (BatchNorm running
statistics), every module's training flag, every parameter's ``.grad`` (moved
aside during the run, so a backward makes fresh gradients instead of adding
into the user's), torch's grad mode and mode stacks, and the RNG state of the
CPU and of initialised CUDA devices — also when a Ctrl-C lands anywhere
(`hookscope._interrupts`). `rng_state` / `set_rng_state` let the two runs of a
comparison start from the same RNG state, so dropout draws the same masks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import torch
from torch import nn

from hookscope._borrow import TorchSwitches
from hookscope._interrupts import critical, critical_contextmanager


def rng_state() -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """The CPU RNG state and, where CUDA is initialised, every CUDA device's."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


@critical
def set_rng_state(state: tuple[torch.Tensor, list[torch.Tensor] | None]) -> None:
    """Restore a state from `rng_state`."""
    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@critical_contextmanager
def _model_state(model: nn.Module) -> Iterator[None]:
    modes = [(m, m.training) for m in model.modules()]
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    grads: list[tuple[nn.Parameter, Any]] = []
    try:
        for param in model.parameters():
            grads.append((param, param.grad))
            param.grad = None
        yield
    finally:
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
        for module, mode in modes:
            module.training = mode
        for param, grad in grads:
            param.grad = grad


@critical_contextmanager
def untouched(*models: nn.Module | None) -> Iterator[None]:
    """Restore buffers, training flags, ``.grad`` of ``models``, torch's switches and the RNG."""
    state = rng_state()
    switches = TorchSwitches.take()
    with ExitStack() as stack:
        try:
            for model in models:
                if model is not None:
                    stack.enter_context(_model_state(model))
            yield
        finally:
            switches.restore()
            set_rng_state(state)
