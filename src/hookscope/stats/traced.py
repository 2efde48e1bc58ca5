"""Reductions written as plain tensor ops, for code that ``torch.compile`` traces.

`hookscope.stats.reduce` picks a path per tensor at run time (the C kernel
through ctypes, a host read of the sum to skip NaN counts): none of that can
be traced. Here every statistic is a tensor op with no branch on a value,
so dynamo puts them in the model's graph and inductor fuses them with the
kernels that produce the tensor (one read of it, often none extra).

A reduced tensor becomes one row of `FIELDS` in a float64 (float32 on MPS)
accumulator; rows of several calls of one module merge with `merge_row`
(sums and counts add, min and max combine), so a step's statistics stay in
one small device buffer until the host reads it once.
"""

from __future__ import annotations

import torch

from hookscope.stats.reduce import Kind, Plan, Reduction

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
        low, high = torch.aminmax(wide)
    else:
        low, high = zero + torch.inf, zero - torch.inf
    nonzero = torch.count_nonzero(x).to(dtype) if plan.zeros != "none" else zero
    if x.is_floating_point():
        nan = torch.isnan(x).sum().to(dtype)
        inf = torch.isinf(x).sum().to(dtype)
    else:
        nan = inf = zero
    one = zero + 1
    return torch.stack([one, numel, total, squares, low, high, nonzero, nan, inf])


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
    nan = torch.isnan(x).sum().to(dtype)
    inf = torch.isinf(x).sum().to(dtype)
    return torch.stack([numel, (wide * wide).sum(), nan, inf])


def to_reduction(row: list[float], plan: Plan, kind: Kind) -> Reduction:
    """A fetched forward row (host floats) as a `Reduction` for `summarize`."""
    values = dict(zip(FIELDS, row, strict=True))
    red = Reduction(kind, int(values["numel"]))
    if kind == "bool":
        red.sum = values["sum"]
        return red
    if plan.sum:
        red.sum = values["sum"]
    if plan.squares:
        red.sumsq = values["sumsq"]
    if plan.extrema:
        red.min, red.max = values["min"], values["max"]
    if plan.zeros != "none":
        red.nonzero = values["nonzero"]
    red.nan, red.inf = values["nan"], values["inf"]
    return red


def grad_reduction(row: list[float]) -> Reduction:
    """A fetched gradient row as a `Reduction` (norm, RMS, NaN and Inf counts)."""
    numel, sumsq, nan, inf = row
    red = Reduction("float", int(numel))
    red.sumsq, red.nan, red.inf = sumsq, nan, inf
    return red
