"""Error metrics between a reference tensor and a tensor under test: pure functions.

No hooks and no I/O. The sums are computed on the reference's device and a
`MetricsBatch` brings every pair's to the host in one transfer at the end
(`tensor_metrics` is a batch of one).

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
    float32 (float64 when either is float64); tensors holding a NaN or Inf
    take a slower exact path in float64.

    Raises:
        ValueError: the shapes differ.
    """
    batch = MetricsBatch(rtol=rtol, atol=atol)
    batch.add(reference, other)
    return batch.results()[0]


class MetricsBatch:
    """Metrics of many tensor pairs with one host transfer for all of them.

    Passes over the data are the cost (see PERF_NOTES): each pair takes about
    a dozen elementwise passes written into three scratch buffers reused from
    pair to pair (a fresh large tensor costs page faults on the CPU), float32
    norms (float64 ones are ~9x slower on the CPU), and the cosine from the
    three norms. `add` only queues; `results` computes every pair and brings
    the six sums of each to the host at once.

    Args:
        rtol: relative tolerance of ``frac_outside``.
        atol: absolute tolerance.
    """

    def __init__(self, *, rtol: float, atol: float) -> None:
        self.rtol = rtol
        self.atol = atol
        self._pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._scratch: dict[tuple[torch.device, torch.dtype], torch.Tensor] = {}

    def add(self, reference: torch.Tensor, other: torch.Tensor) -> int:
        """Queue one pair (nothing is computed yet); returns its index in `results`.

        Raises:
            ValueError: the shapes differ.
        """
        if reference.shape != other.shape:
            raise ValueError(f"shapes differ: {tuple(reference.shape)} vs {tuple(other.shape)}")
        a = reference.detach()
        self._pairs.append((a, other.detach().to(a.device)))
        return len(self._pairs) - 1

    def results(self) -> list[Metrics]:
        """The metrics of every pair queued, in order (one device-to-host transfer)."""
        largest = max((a.numel() for a, _ in self._pairs), default=0)
        sums = [self._sums_of(a, b, largest) for a, b in self._pairs if a.numel()]
        host = iter(torch.stack([s.to(sums[0].device) for s in sums]).tolist() if sums else [])
        out = []
        for a, b in self._pairs:
            if not a.numel():
                out.append(Metrics(0.0, 0.0, math.inf, 1.0, 0.0, 0))
                continue
            values = next(host)
            if all(map(math.isfinite, values)):
                out.append(_from_sums(values, a.numel()))
            else:  # a NaN or Inf, or a float32 norm overflowed: the careful float64 path
                out.append(_nonfinite_metrics(a, b, rtol=self.rtol, atol=self.atol))
        self._scratch.clear()
        return out

    def _buffers(
        self, like: torch.Tensor, dtype: torch.dtype, largest: int
    ) -> tuple[torch.Tensor, ...]:
        n = like.numel()
        key = (like.device, dtype)
        buf = self._scratch.get(key)
        if buf is None:  # sized once for the largest pair: growing it would fault pages anew
            buf = torch.empty(3 * largest, dtype=dtype, device=like.device)
            self._scratch[key] = buf
        return tuple(buf[i * n : (i + 1) * n].view(like.shape) for i in range(3))

    def _sums_of(self, a: torch.Tensor, b: torch.Tensor, largest: int) -> torch.Tensor:
        dtype = torch.float64 if torch.float64 in (a.dtype, b.dtype) else torch.float32
        a, b = a.to(dtype), b.to(dtype)  # no copy when they already are
        diff, abs_a, work = self._buffers(a, dtype, largest)
        torch.sub(b, a, out=diff)
        norm_d = torch.linalg.vector_norm(diff)
        diff.abs_()
        max_abs = diff.amax()
        torch.abs(a, out=abs_a)
        # |d| > atol + rtol |a|  <=>  |d| - rtol |a| > atol
        torch.add(diff, abs_a, alpha=-self.rtol, out=work)
        outside = torch.count_nonzero(work > self.atol)
        max_rel = torch.div(diff, abs_a.clamp_min_(_TINY), out=work).amax()
        norm_a, norm_b = torch.linalg.vector_norm(a), torch.linalg.vector_norm(b)
        parts = (max_abs, max_rel, norm_a, norm_d, norm_b, outside.to(dtype))
        return torch.stack(parts).to(torch.float64)


def _from_sums(values: list[float], numel: int) -> Metrics:
    max_abs, max_rel, norm_a, norm_d, norm_b, n_out = values
    # a.b = (|a|^2 + |b|^2 - |d|^2) / 2, so 1 - cos = (|d|^2 - (|a| - |b|)^2) / (2 |a| |b|):
    # written this way the rounding of the float32 norms barely moves a cosine near 1.
    if norm_a == 0.0 or norm_b == 0.0:
        cosine = 1.0 if norm_a == norm_b else 0.0
    else:
        cosine = 1.0 - (norm_d**2 - (norm_a - norm_b) ** 2) / (2.0 * norm_a * norm_b)
    return Metrics(
        max_abs=max_abs,
        max_rel=max_rel,
        sqnr_db=_sqnr(norm_a**2, norm_d**2),
        cosine=max(-1.0, min(1.0, cosine)),
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
