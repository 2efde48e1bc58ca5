"""Running a model for a comparison without leaving a trace on it.

`untouched` puts back, on exit, every buffer value (BatchNorm running
statistics), every module's training flag, every parameter's ``.grad`` and the
RNG state of the CPU and of initialised CUDA devices. `rng_state` /
`set_rng_state` let the two runs of a comparison start from the same RNG
state, so dropout draws the same masks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from torch import nn


def rng_state() -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """The CPU RNG state and, where CUDA is initialised, every CUDA device's."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def set_rng_state(state: tuple[torch.Tensor, list[torch.Tensor] | None]) -> None:
    """Restore a state from `rng_state`."""
    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@contextmanager
def _model_state(model: nn.Module) -> Iterator[None]:
    modes = [(m, m.training) for m in model.modules()]
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    grads: list[tuple[nn.Parameter, Any]] = [(p, p.grad) for p in model.parameters()]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
        for module, mode in modes:
            module.training = mode
        for param, grad in grads:
            param.grad = grad


@contextmanager
def untouched(*models: nn.Module | None) -> Iterator[None]:
    """Restore buffers, training flags, ``.grad`` of ``models`` and the RNG state on exit."""
    state = rng_state()
    with ExitStack() as stack:
        for model in models:
            if model is not None:
                stack.enter_context(_model_state(model))
        try:
            yield
        finally:
            set_rng_state(state)
