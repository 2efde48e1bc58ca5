"""One-pass reductions through ``torch.compile`` (``Monitor(fused=True)``).

Eager PyTorch needs three passes over a tensor for sum, sum of squares and
min/max; a compiled kernel reads it once and also counts non-zeros in the
same pass. The price is a one-time compile (8-30 s on a 2-core CPU, more per
new dtype). Meant for GPUs: on CPU the C kernel of `hookscope.stats.native`
is taken first (inductor's CPU code measured about 2x slower than it).
Tensors the kernel does not cover (float64, non-contiguous, integer,
complex) and any compile failure fall back to the eager reductions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from hookscope.errors import HookscopeWarning

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_compiled: dict[bool, Callable[[torch.Tensor], torch.Tensor]] = {}
_broken: list[BaseException] = []
_warm: set[tuple[bool, torch.dtype, str]] = set()

#: Order of the values in the packed result.
FIELDS = ("sum", "norm", "min", "max", "nonzero")
FIELDS_NO_ZEROS = FIELDS[:4]


def _moments(x: torch.Tensor) -> torch.Tensor:
    x = x.float()
    return torch.stack([x.sum(), (x * x).sum().sqrt(), x.min(), x.max()])


def _moments_zeros(x: torch.Tensor) -> torch.Tensor:
    x = x.float()
    nonzero = (x != 0).sum().float()
    return torch.stack([x.sum(), (x * x).sum().sqrt(), x.min(), x.max(), nonzero])


def supports(tensor: torch.Tensor) -> bool:
    """True when the compiled kernel can reduce ``tensor``."""
    return not _broken and tensor.dtype in _DTYPES and tensor.is_contiguous()


def reduce_packed(tensor: torch.Tensor, zeros: bool) -> torch.Tensor | None:
    """``[sum, norm, min, max(, nonzero)]`` as one float32 vector, or None if compiling failed."""
    fn = _compiled.get(zeros)
    if fn is None:
        fn = torch.compile(_moments_zeros if zeros else _moments, dynamic=True, fullgraph=True)
        _compiled[zeros] = fn
    flat = tensor.detach().reshape(-1)
    key = (zeros, tensor.dtype, tensor.device.type)
    try:
        if key in _warm:
            return fn(flat)
        # The first call per dtype compiles; the compiler's own deprecation
        # warnings are not the user's business.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            packed = fn(flat)
        _warm.add(key)
        return packed
    except Exception as exc:  # no C++ compiler, unsupported backend, ...
        _broken.append(exc)
        warnings.warn(
            f"fused statistics unavailable ({type(exc).__name__}: {exc}); using eager reductions",
            HookscopeWarning,
            stacklevel=2,
        )
        return None
