"""Packing a step's reductions into the float64 vectors that ``ranks="reduce"`` all-reduces.

Pure functions, no collective (`hookscope.monitor.ranks` runs those):

* `pack_sums` / `pack_maxes` / `unpack`: per tensor, six numbers for a SUM
  (element count, sum, sum of squares, zero, NaN and Inf counts) and two for
  a MAX (minus the minimum, the maximum); a tensor this rank does not hold
  enters as zeros and ``-inf``, so the combined values are exact over the
  ranks that hold it.
* `encode_first` / `decode_first`: where this rank saw its first NaN/Inf,
  written into MAX slots so that one MAX leaves every rank with the location
  of the one that ranks first (earliest phase, then lowest rank) — no
  broadcast, no second round trip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from hookscope.monitor.results import Key
from hookscope.stats import Reduction, unshift

SUMMED = ("sum", "sumsq", "nonzero", "nan", "inf")
_GRAD_FIELDS = ("sumsq", "nan", "inf")

#: `encode_first`: 3 bytes of text per slot under a priority that fits 29 bits,
#: so that priority * 2**24 + payload stays below 2**53 (exact in float64).
_PAYLOAD = 1 << 24
_TOP = (1 << 29) - 1
_BYTES = 3


def _sumsq(red: Reduction) -> float | None:
    if isinstance(red.sumsq, float):
        return red.sumsq
    return red.norm * red.norm if isinstance(red.norm, float) else None


def pack_sums(reds: Sequence[Reduction | None], replicas: Sequence[int]) -> torch.Tensor:
    """Per tensor: element count, sum, sum of squares, zero, NaN and Inf counts (zeros if absent).

    A tensor that ``n`` ranks hold alike (an HSDP shard) enters with weight
    ``1 / n``, so the SUM over all ranks counts it once.
    """
    rows = []
    for red, copies in zip(reds, replicas, strict=True):
        if red is None:
            rows.append([0.0] * (1 + len(SUMMED)))
            continue
        unshift(red)  # shifted moments do not add across ranks
        squares = _sumsq(red)
        values = [red.sum, squares, red.nonzero, red.nan, red.inf]
        row = [float(red.numel)] + [float(v) if isinstance(v, float) else 0.0 for v in values]
        rows.append([value / copies for value in row])
    return torch.tensor(rows, dtype=torch.float64).reshape(-1)


def pack_maxes(reds: Sequence[Reduction | None]) -> list[float]:
    """Per tensor: minus the minimum and the maximum, for a MAX all-reduce (-inf if absent)."""
    out: list[float] = []
    for red in reds:
        if red is None:
            out += [-math.inf, -math.inf]
        else:
            out += [-_extreme(red.min, math.inf), _extreme(red.max, -math.inf)]
    return out


def _extreme(value: object, default: float) -> float:
    return value if isinstance(value, float) and not math.isnan(value) else default


def unpack(
    keys: Sequence[Key],
    merged: dict[Key, Reduction],
    sums: torch.Tensor,
    maxes: torch.Tensor | None,
) -> None:
    """Write the combined values of ``keys`` into the reductions of ``merged`` that this rank holds."""
    summed = sums.view(-1, 1 + len(SUMMED)).tolist()
    extrema = None if maxes is None else maxes.view(-1, 2).tolist()
    for index, key in enumerate(keys):
        red = merged.get(key)
        if red is None:
            continue
        values = summed[index]
        empty = red.numel == 0  # this rank held none of it: take what the others had
        red.numel = round(values[0])
        if red.sumsq is None and isinstance(red.norm, float):
            red.norm = None
            red.sumsq = 0.0
        for name, value in zip(SUMMED, values[1:], strict=True):
            if isinstance(getattr(red, name), float) or (empty and name in _GRAD_FIELDS):
                setattr(red, name, value)
        if extrema is not None and isinstance(red.min, float):
            red.min, red.max = -extrema[index][0], extrema[index][1]


def text_slots(nbytes: int) -> int:
    """MAX slots `encode_first` needs for ``nbytes`` bytes of text."""
    return -(-nbytes // _BYTES)


def encode_first(code: float, text: str, slots: int) -> list[float]:
    """``text`` (UTF-8, cut at ``3 * slots`` bytes) under priority ``code`` for a MAX.

    Args:
        code: ``phase * world_size + rank`` of this rank's first NaN/Inf
            (smaller wins), or ``inf`` for none (all slots 0).
        text: what to tell the other ranks (module and tensor path).
        slots: the vector length, the same on every rank.
    """
    if math.isinf(code):
        return [0.0] * slots
    raw = text.encode()[: _BYTES * slots].ljust(_BYTES * slots, b"\0")
    priority = (_TOP - int(code)) * _PAYLOAD
    return [
        float(priority + int.from_bytes(raw[i : i + _BYTES], "big"))
        for i in range(0, len(raw), _BYTES)
    ]


def decode_first(values: Sequence[float]) -> tuple[float, str]:
    """The smallest ``code`` and its text from MAX-reduced `encode_first` slots (``inf`` if none)."""
    if not values or values[0] <= 0:
        return math.inf, ""
    code = _TOP - int(values[0]) // _PAYLOAD
    raw = b"".join((int(v) % _PAYLOAD).to_bytes(_BYTES, "big") for v in values)
    return float(code), raw.rstrip(b"\0").decode(errors="replace")
