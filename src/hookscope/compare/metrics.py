"""Error metrics between a reference tensor and a tensor under test: pure functions.

No hooks and no I/O. Everything is computed on the reference's device and
brought to the host in one transfer per tensor pair (two when the first
shows a NaN or Inf).

Definitions (``a`` is the reference, ``b`` the tensor under test, ``d = b - a``):

* ``max_abs``: ``max |d|``.
* ``max_rel``: ``max |d| / max(|a|, tiny)``, ``tiny`` the smallest normal float32.
* ``sqnr_db``: ``10 log10(sum a^2 / sum d^2)``; ``inf`` when ``d`` is all zero.
* ``cosine``: ``sum(a b) / sqrt(sum a^2 sum b^2)``; 1.0 when both are all zero.
* ``frac_outside``: the fraction of elements with ``|d| > atol + rtol |a|``
  (the `torch.isclose` test with ``a`` as the reference); a NaN or Inf
  on one side only counts as outside, the same NaN or Inf on both does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_TINY = torch.finfo(torch.float32).tiny


@dataclass(frozen=True)
class Metrics:
    """How far one tensor is from its reference (see the module docstring)."""

    max_abs: float
    max_rel: float
    sqnr_db: float
    cosine: float
    frac_outside: float
    numel: int

    def exceeds(self) -> bool:
        """True when some element lies outside the tolerance."""
        return self.frac_outside > 0.0


def tensor_metrics(
    reference: torch.Tensor, other: torch.Tensor, *, rtol: float, atol: float
) -> Metrics:
    """Compare ``other`` with ``reference`` (same shape; any float or integer dtypes).

    ``other`` is moved to the reference's device. Both are compared in
    float32 (float64 when either is float64), with float64 on the host for
    the final ratios; tensors holding a NaN or Inf take a slower exact path.

    Raises:
        ValueError: the shapes differ.
    """
    if reference.shape != other.shape:
        raise ValueError(f"shapes differ: {tuple(reference.shape)} vs {tuple(other.shape)}")
    wide = torch.float64 in (reference.dtype, other.dtype)
    dtype = torch.float64 if wide else torch.float32
    a = reference.detach().to(dtype)
    b = other.detach().to(device=a.device, dtype=dtype)
    numel = a.numel()
    if numel == 0:
        return Metrics(0.0, 0.0, math.inf, 1.0, 0.0, 0)
    diff = b - a
    diff.abs_()
    max_abs = diff.amax()
    if not bool(max_abs.isfinite()):  # one host read; NaN/Inf are rare, take the careful path
        return _nonfinite_metrics(a, b, rtol=rtol, atol=atol)
    # Passes over the data are the cost (see PERF_NOTES): norms instead of
    # sums of squares, the dot product from the three norms, |a| reused.
    abs_a = a.abs().clamp_min_(_TINY)
    values = torch.stack(
        (
            max_abs.to(torch.float64),
            (diff / abs_a).amax().to(torch.float64),
            torch.linalg.vector_norm(a, dtype=torch.float64),
            torch.linalg.vector_norm(diff, dtype=torch.float64),
            torch.linalg.vector_norm(b, dtype=torch.float64),
            (diff > abs_a.mul_(rtol).add_(atol)).sum(dtype=torch.float64),
        )
    ).tolist()
    max_abs_v, max_rel, norm_a, norm_d, norm_b, n_out = values
    signal, noise, power_b = norm_a**2, norm_d**2, norm_b**2
    # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b
    dot = (signal + power_b - noise) / 2
    return Metrics(
        max_abs=max_abs_v,
        max_rel=max_rel,
        sqnr_db=_sqnr(signal, noise),
        cosine=max(-1.0, min(1.0, _cosine(dot, signal, power_b))),
        frac_outside=n_out / numel,
        numel=numel,
    )


def _nonfinite_metrics(a: torch.Tensor, b: torch.Tensor, *, rtol: float, atol: float) -> Metrics:
    a = a.to(torch.float64)
    b = b.to(torch.float64)
    diff = (b - a).abs_()
    # Equal infinities give a NaN difference, NaN == NaN is False: neither is an error.
    same = (a == b) | (a.isnan() & b.isnan())
    diff.masked_fill_(same, 0.0)
    diff.nan_to_num_(nan=math.inf)
    abs_a = a.abs()
    outside = diff > atol + rtol * abs_a
    values = torch.stack(
        (
            diff.amax(),
            (diff / abs_a.clamp_min(_TINY)).amax(),
            a.square().sum(),
            diff.square().sum(),
            (a * b).sum(),
            b.square().sum(),
            outside.sum(dtype=torch.float64),
        )
    ).tolist()
    max_abs, max_rel, signal, noise, dot, power_b, n_out = values
    return Metrics(
        max_abs=max_abs,
        max_rel=max_rel,
        sqnr_db=_sqnr(signal, noise),
        cosine=_cosine(dot, signal, power_b),
        frac_outside=n_out / a.numel(),
        numel=a.numel(),
    )


def _sqnr(signal: float, noise: float) -> float:
    if noise == 0.0:
        return math.inf
    if math.isnan(noise) or math.isinf(noise) or signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _cosine(dot: float, norm_a2: float, norm_b2: float) -> float:
    if norm_a2 == 0.0 and norm_b2 == 0.0:
        return 1.0
    if norm_a2 == 0.0 or norm_b2 == 0.0:
        return 0.0
    return dot / math.sqrt(norm_a2 * norm_b2)
