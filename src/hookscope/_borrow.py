"""What a call that runs the user's model puts back: torch's global switches and the RNG.

`borrowing` wraps a whole public call (`summary`, the doctor, a comparison's
run). On exit — also when a ``KeyboardInterrupt`` cut a context manager's
``__exit__`` short inside, see `hookscope._interrupts` — grad mode and the
default dtype are as they were, and dispatch and torch-function modes pushed
inside and never popped are popped. `RandomState` takes and restores every
generator a forward may draw from.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import _pop_mode

from hookscope._interrupts import critical, critical_contextmanager

__all__ = ["RandomState", "TorchSwitches", "borrowing"]


@dataclass(frozen=True)
class TorchSwitches:
    """Grad mode, default dtype and the depth of torch's mode stacks."""

    grad: bool
    dtype: torch.dtype
    dispatch_modes: int
    function_modes: int

    @classmethod
    def take(cls) -> TorchSwitches:
        """The switches as they are now."""
        return cls(
            torch.is_grad_enabled(),
            torch.get_default_dtype(),
            torch._C._len_torch_dispatch_stack(),
            torch._C._len_torch_function_stack(),
        )

    @critical
    def restore(self) -> None:
        """Put them back (safe to repeat)."""
        while torch._C._len_torch_dispatch_stack() > self.dispatch_modes:
            _pop_mode()
        while torch._C._len_torch_function_stack() > self.function_modes:
            torch._C._pop_torch_function_stack()
        torch._C._set_grad_enabled(self.grad)
        if torch.get_default_dtype() != self.dtype:
            torch.set_default_dtype(self.dtype)


@dataclass(frozen=True)
class RandomState:
    """Torch's CPU and (initialised) CUDA generators, Python's and NumPy's (when imported)."""

    cpu: torch.Tensor
    cuda: list[torch.Tensor] | None
    python: Any
    numpy: Any

    @classmethod
    def take(cls) -> RandomState:
        """Every generator's state now."""
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        np = sys.modules.get("numpy")
        return cls(
            torch.random.get_rng_state(),
            cuda,
            random.getstate(),
            None if np is None else np.random.get_state(),
        )

    @critical
    def restore(self) -> None:
        """Set every generator back (safe to repeat)."""
        torch.random.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.python)
        np = sys.modules.get("numpy")
        if self.numpy is not None and np is not None:
            np.random.set_state(self.numpy)


@critical_contextmanager
def borrowing() -> Iterator[None]:
    """Hold `hookscope._interrupts.guard` and put `TorchSwitches` back on exit."""
    switches = TorchSwitches.take()
    try:
        yield
    finally:
        switches.restore()
