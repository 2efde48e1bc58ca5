"""Reductions written as plain tensor ops, for code that ``torch.compile`` traces.

`hookscope.stats.reduce` picks a path per tensor at run time (the C kernel
through ctypes, a host read of the sum to skip NaN counts): none of that can
be traced. Here every statistic is a tensor op with no branch on a value,
so dynamo puts them in the model's graph and inductor fuses them with the
kernels that produce the tensor (one read of it, often none extra). On the
CPU the compiled Monitor uses `hookscope.stats.rowop` instead (one extern
op per row); these ops remain its formulation on other devices and the
rows' fallback for NaN/Inf, integer, bool and complex tensors.

How each statistic is written matters on CPU, where inductor vectorises
some ops and not others (SmallCNN's ReLU output, 0.5 M float32 elements, 2
threads; extra time over the fused producer): ``isnan(x).sum()`` and
``isinf(x).sum()`` together ~1.5 ms, ``(x != x).sum()`` and
``(x.abs() == inf).sum()`` ~0.05 ms; ``aminmax`` ~0.08 ms in float64, ~0.03 ms
in the tensor's own dtype (exact either way); sum, sum of squares and the
zero count ~0.02-0.05 ms each. Counts use int32 accumulators when the tensor
has fewer than 2**31 elements (about half the cost of int64).

A reduced tensor becomes one row of `FIELDS` in a float64 (float32 on MPS)
accumulator; rows of several calls of one module merge with `merge_row`
(sums and counts add, min and max combine), so a step's statistics stay in
one small device buffer until the host reads it once.
"""

from __future__ import annotations

import torch

from hookscope.stats.reduce import Plan
from hookscope.stats.reduction import Kind, Reduction

#: Columns of a forward row. ``calls`` counts the merged calls.
FIELDS = ("calls", "numel", "sum", "sumsq", "min", "max", "nonzero", "nan", "inf")
#: Columns of a gradient row.
GRAD_FIELDS = ("numel", "sumsq", "nan", "inf")

_MIN, _MAX = FIELDS.index("min"), FIELDS.index("max")


def accumulator_dtype(device: torch.device) -> torch.dtype:
    """float64 where the device has it (MPS does not)."""
    return torch.float32 if device.type == "mps" else torch.float64


def empty_rows(rows: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """A forward buffer with nothing merged in: zeros, min ``+inf`` and max ``-inf``."""
    dev = torch.device(device)
    buf = torch.zeros(rows, len(FIELDS), dtype=accumulator_dtype(dev), device=dev)
    reset_rows(buf)
    return buf


def reset_rows(buf: torch.Tensor) -> None:
    """Empty a forward buffer in place (start of a step)."""
    buf.zero_()
    buf[:, _MIN] = torch.inf
    buf[:, _MAX] = -torch.inf


def reduce_row(t: torch.Tensor, plan: Plan, dtype: torch.dtype) -> torch.Tensor:
    """One forward row of ``t`` (`FIELDS`); fields ``plan`` does not ask for stay neutral.

    NaN and Inf counts are always exact (in a fused kernel they cost almost
    nothing). Min and max propagate NaN.
    """
    x = t.detach()
    if x.is_complex():
        x = x.abs()
    wide = x.to(dtype)
    zero = torch.zeros((), dtype=dtype, device=x.device)
    numel = torch.full((), x.numel(), dtype=dtype, device=x.device)
    total = wide.sum()  # also what a bool tensor reports
    squares = (wide * wide).sum() if plan.squares else zero
    if plan.extrema:
        # min and max are exact in the tensor's own dtype, and cheaper there
        low, high = torch.aminmax(wide if x.dtype == torch.bool else x)
        low, high = low.to(dtype), high.to(dtype)
    else:
        low, high = zero + torch.inf, zero - torch.inf
    nonzero = _count(x != 0, dtype) if plan.zeros != "none" else zero
    nan, inf = _nonfinite(x, dtype)
    one = zero + 1
    return torch.stack([one, numel, total, squares, low, high, nonzero, nan, inf])


def _count(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """How many elements of ``mask`` are True, as a ``dtype`` scalar."""
    small = isinstance(mask.numel(), int) and mask.numel() < 2**31
    return mask.sum(dtype=torch.int32 if small else torch.int64).to(dtype)


def _nonfinite(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact NaN and Inf counts of ``x`` (zeros for integer tensors).

    Written as comparisons, which inductor vectorises on CPU (``isnan`` and
    ``isinf`` it does not: 30x the cost in a fused kernel).
    """
    if not x.is_floating_point():
        zero = torch.zeros((), dtype=dtype, device=x.device)
        return zero, zero
    return _count(x != x, dtype), _count(x.abs() == torch.inf, dtype)


def merge_row(old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """Combine two forward rows: add sums and counts, keep the lower min and the higher max."""
    added = old + new
    low = torch.minimum(old[_MIN], new[_MIN])
    high = torch.maximum(old[_MAX], new[_MAX])
    return torch.cat([added[:_MIN], low.view(1), high.view(1), added[_MAX + 1 :]])


def grad_row(g: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """One gradient row of ``g`` (`GRAD_FIELDS`): size, sum of squares, NaN and Inf counts."""
    x = g.detach()
    if x.is_complex():
        x = x.abs()
    wide = x.to(dtype)
    numel = torch.full((), x.numel(), dtype=dtype, device=x.device)
    nan, inf = _nonfinite(x, dtype)
    return torch.stack([numel, (wide * wide).sum(), nan, inf])


def to_reduction(row: list[float], plan: Plan, kind: Kind) -> Reduction:
    """A fetched forward row (host floats) as a `Reduction` for `summarize`."""
    _calls, numel, total, sumsq, low, high, nonzero, nan, inf = row  # `FIELDS`
    red = Reduction(kind, int(numel))
    red.host = True
    if kind == "bool":
        red.sum = total
        return red
    if plan.sum:
        red.sum = total
    if plan.squares:
        red.sumsq = sumsq
    if plan.extrema:
        red.min, red.max = low, high
    if plan.zeros != "none":
        red.nonzero = nonzero
    red.nan, red.inf = nan, inf
    return red


def grad_reduction(row: list[float]) -> Reduction:
    """A fetched gradient row as a `Reduction` (norm, RMS, NaN and Inf counts)."""
    numel, sumsq, nan, inf = row
    red = Reduction("float", int(numel))
    red.sumsq, red.nan, red.inf = sumsq, nan, inf
    red.host = True
    return red
