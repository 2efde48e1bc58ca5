"""Keeping the statistics right: second passes on CPU, overflow-safe host arithmetic.

The first pass (`hookscope.stats.reduce`) sums ``d = x - shift`` in the
tensor's precision. On CPU its results are host values, so `repair` can
check them without a device synchronisation and take one more pass where
they cannot be trusted:

* the sums overflowed although every element is finite (float32 above
  ~1e19, float64 above ~1e154): again in float64 on ``x / 2**k``, with
  ``2**k`` the power of two at the tensor's largest magnitude;
* the variance cancelled (``var < 1e-2 * mean(d**2)``: the shift sits far
  from the mean, or there was none and ``|mean| >> std``): again with the
  mean as the shift;
* the mean cancelled (``|mean| < 1e-6`` of the values' scale, e.g. +1e20
  and -1e20 mixed): again with no shift, so that no element is rounded;
* the squares underflowed: eager float32 sums of squares lose values below
  ~1e-19 (gradients of 1e-25 gave a norm of 0): again in float64 on
  ``x / 2**k`` when the RMS is below `UNDERFLOW` of the accumulator's range.

The kernel takes that pass where it can (one more read), else float64
eager ops. `moment_stats` and `merge_moments` then work on the host with
products and ``hypot`` that stay in range: statistics of finite input are
finite and never raise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from hookscope.stats import native

if TYPE_CHECKING:
    from hookscope.stats.reduction import Reduction

#: Below this fraction of ``mean(d**2)`` the variance has lost its digits.
VAR_CANCEL = 1e-2
#: Below this fraction of the values' scale the mean has lost its digits.
MEAN_CANCEL = 1e-6
#: An RMS below this factor times the square root of the accumulator's smallest
#: normal number may have lost squares to underflow (``2**20``: six decades of margin).
UNDERFLOW = 2.0**20


def repair(t: torch.Tensor, red: Reduction) -> None:
    """Take ``t``'s moments again where the first pass overflowed or cancelled (CPU only).

    ``red`` holds host values or 0-d CPU tensors; NaN or Inf in ``t`` (its
    counts are set) leave it as it is.
    """
    if float(red.nan or 0.0) + float(red.inf or 0.0) > 0:
        return
    total, rms = _host(red.sum), rms_of(red)
    if rms is None:
        return
    if not (math.isfinite(rms) and (total is None or math.isfinite(total))):
        absmax = float(t.abs().max())
        _float64_pass(t, red, math.frexp(absmax)[1] - 1, 0.0)
        total, rms = _host(red.sum), rms_of(red)
    elif rms < _underflow_rms(t.dtype) and red.scale == 1.0:
        absmax = float(t.abs().max())
        if absmax > 0.0:  # squares of nonzero values were lost: scale them up first
            _float64_pass(t, red, math.frexp(absmax)[1] - 1, 0.0)
            total, rms = _host(red.sum), rms_of(red)
    if total is None or rms is None:
        return
    shift = _host(red.shift) or 0.0
    target = cancelled(red.numel, total, rms, shift)
    if target is None:
        return
    if red.scale != 1.0 or not native.takes(t):
        _float64_pass(t, red, round(math.log2(red.scale)), target)
        return
    # the target rounded to t's precision (0.0 is exact in all of them)
    start = target and float(torch.tensor(target, dtype=t.dtype))
    if start == shift and red.sumsq is not None:
        return  # the same pass again would change nothing
    got = native.moments(t, start)
    assert got is not None
    red.sum, red.sumsq, red.norm, red.shift = got.shifted_sum, got.shifted_sumsq, None, got.shift


def cancelled(n: int, total: float, rms: float, shift: float) -> float | None:
    """The shift for a second pass when the moments of ``d = x - shift`` lost digits, else None.

    Args:
        n: element count.
        total: sum of ``d``.
        rms: root mean square of ``d``.
        shift: the shift of the first pass.

    Returns:
        0.0 when the mean cancelled, the mean when the variance did, None when
        both kept their digits.
    """
    m = total / n
    mean = shift + m
    if abs(mean) < MEAN_CANCEL * max(abs(shift), rms):
        return 0.0
    if (rms - abs(m)) * (rms + abs(m)) < VAR_CANCEL * rms * rms:
        return mean
    return None


def _underflow_rms(dtype: torch.dtype) -> float:
    """The RMS below which the first pass's squares (float32, or float64 for float64) may have underflowed."""
    tiny = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).tiny
    return math.sqrt(tiny) * UNDERFLOW


def _float64_pass(t: torch.Tensor, red: Reduction, exponent: int, shift: float) -> None:
    """Moments of ``t / 2**exponent - shift`` in float64 (a copy of ``t``)."""
    u = t.to(torch.float64, copy=True).reshape(-1)
    if exponent:  # in two factors: 2**-1023 alone would be subnormal
        u.mul_(math.ldexp(1.0, -(exponent // 2))).mul_(math.ldexp(1.0, -(exponent - exponent // 2)))
    if shift:
        u.sub_(shift)
    red.sum, red.sumsq, red.norm = float(u.sum()), float(torch.dot(u, u)), None
    red.shift, red.scale = shift, math.ldexp(1.0, exponent)


def _host(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def rms_of(red: Reduction) -> float | None:
    """Root mean square of ``d`` from ``sumsq`` or ``norm`` (host values), or None."""
    return rms_from(red.numel, _host(red.sumsq), _host(red.norm))


def rms_from(n: int, sumsq: float | None, norm: float | None) -> float | None:
    """`rms_of` from host values: ``sumsq`` if known, else ``norm``; None without either."""
    if sumsq is not None:
        return math.sqrt(sumsq / n) if sumsq >= 0 else math.nan
    return None if norm is None else norm / math.sqrt(n)


def moment_stats(
    n: int,
    total: float | None,
    rms: float | None,
    shift: float,
    scale: float,
) -> dict[str, float]:
    """mean, std, rms and norm of ``x`` from the sum and RMS of ``d = x / scale - shift``.

    Uses only products, square roots and ``hypot`` of numbers in range: no
    OverflowError, and finite input gives finite results. An infinite RMS of
    ``d`` is the RMS of ``x`` (``+inf`` and ``-inf`` together make the mean
    NaN, but not the RMS: as NumPy, the RMS is inf).
    """
    out: dict[str, float] = {}
    m = None if total is None else total / n
    if m is not None:
        out["mean"] = scale * (shift + m)
    if rms is None:
        return out
    if m is not None:
        var = (rms - abs(m)) * (rms + abs(m))
        out["std"] = scale * math.sqrt(var) if var > 0 else (0.0 if var >= 0 else math.nan)
    if shift and m is not None and math.isfinite(rms):
        out["rms"] = math.hypot(out["mean"], out["std"])
    else:
        out["rms"] = scale * rms
    out["norm"] = out["rms"] * math.sqrt(n)
    return out


Moments = tuple[int, float, float, float, float]


def merge_moments(a: Moments, b: Moments) -> tuple[float, float, float, float]:
    """Chan et al.'s merge of two ``(n, mean of d, rms of d, shift, scale)``.

    Both are first expressed at one power-of-two scale near the larger
    magnitude, so no product leaves the float range. Returns ``(sum, sum of
    squares, shift, scale)`` of the union with its own mean as the shift
    (sum 0): a chain of merges keeps the variance's digits.
    """
    big = max(s * (abs(c) + abs(m) + r) for _, m, r, c, s in (a, b))
    scale = math.ldexp(1.0, math.frexp(big)[1] - 1) if math.isfinite(big) and big > 0 else 1.0
    parts = []
    for n, m, r, c, s in (a, b):
        f = s / scale
        m, r = f * m, f * r
        parts.append((n, f * c + m, n * max((r - abs(m)) * (r + abs(m)), 0.0)))
    (na, mean_a, m2a), (nb, mean_b, m2b) = parts
    n = na + nb
    delta = mean_b - mean_a
    mean = mean_a + delta * (nb / n)
    return 0.0, m2a + m2b + delta * delta * (na * (nb / n)), mean, scale
