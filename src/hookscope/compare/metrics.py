"""Error metrics between a reference tensor and a tensor under test: pure functions.

No hooks and no I/O. Everything is computed in float64 on the reference's
device and brought to the host in one transfer per tensor pair.

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

    ``other`` is moved to the reference's device. Both are compared in float64.

    Raises:
        ValueError: the shapes differ.
    """
    if reference.shape != other.shape:
        raise ValueError(f"shapes differ: {tuple(reference.shape)} vs {tuple(other.shape)}")
    a = reference.detach().to(torch.float64)
    b = other.detach().to(device=a.device, dtype=torch.float64)
    numel = a.numel()
    if numel == 0:
        return Metrics(0.0, 0.0, math.inf, 1.0, 0.0, 0)
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
    max_abs, max_rel, signal, noise, dot, norm_b, n_out = values
    return Metrics(
        max_abs=max_abs,
        max_rel=max_rel,
        sqnr_db=_sqnr(signal, noise),
        cosine=_cosine(dot, signal, norm_b),
        frac_outside=n_out / numel,
        numel=numel,
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
