"""Packing a step's reductions into the float64 vectors that ``ranks="reduce"`` all-reduces.

Pure functions, no collective (`hookscope.monitor.ranks` runs those):

* `pack` / `unpack`: per tensor, six numbers for a SUM (element count, sum,
  sum of squares, zero, NaN and Inf counts) and two for a MAX (minus the
  minimum, the maximum), built in one pass over the reductions and one
  tensor; a tensor this rank does not hold enters as zeros and ``-inf``, so
  the combined values are exact over the ranks that hold it.
* `encode_first` / `decode_first`: where this rank saw its first NaN/Inf,
  written into MAX slots so that one MAX leaves every rank with the location
  of the one that ranks first (earliest phase, then lowest rank) — no
  broadcast, no second round trip.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import torch

from hookscope.monitor.results import Key
from hookscope.stats import Reduction, accuracy

SUMMED = ("sum", "sumsq", "nonzero", "nan", "inf")
_GRAD_FIELDS = ("sumsq", "nan", "inf")

#: `encode_first`: 3 bytes of text per slot under a priority that fits 29 bits,
#: so that priority * 2**24 + payload stays below 2**53 (exact in float64).
_PAYLOAD = 1 << 24
_TOP = (1 << 29) - 1
_BYTES = 3

#: Numbers per tensor in the SUM vector; a tensor this rank does not hold.
_WIDTH = 1 + len(SUMMED)
_NONE = (0.0,) * _WIDTH + (-math.inf, -math.inf)


def _float(value: object) -> float:
    return value if isinstance(value, float) else 0.0


def _row(red: Reduction) -> tuple[float, ...]:
    """Element count, the five sums of ``x`` itself, minus the minimum and the maximum.

    Shifted moments (of ``x / scale - shift``) are turned into sums of ``x``
    (they do not add across ranks otherwise); `unpack` then writes them back
    unshifted.
    """
    n, total = red.numel, red.sum
    squares = red.sumsq
    if squares is None and isinstance(red.norm, float):
        squares = red.norm * red.norm
    if isinstance(total, float) and (red.shift or red.scale != 1.0) and n:
        rms = None
        if isinstance(squares, float):
            rms = math.sqrt(squares / n) if squares >= 0 else math.nan
        shift = red.shift if isinstance(red.shift, float) else 0.0
        got = accuracy.moment_stats(n, total, rms, shift, red.scale)
        total = got["mean"] * n
        squares = got["rms"] * got["rms"] * n if "rms" in got else None
    low, high = red.min, red.max
    return (
        float(n),
        _float(total),
        _float(squares),
        _float(red.nonzero),
        _float(red.nan),
        _float(red.inf),
        -low if isinstance(low, float) and low == low else -math.inf,  # NaN: none
        high if isinstance(high, float) and high == high else -math.inf,
    )


def pack(
    reds: Sequence[Reduction | None], replicas: Sequence[int], header: list[float], extrema: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The SUM vector and the MAX vector (``header`` first) of ``reds``, in their order.

    Per tensor, six numbers by SUM (element count, sum, sum of squares, zero,
    NaN and Inf counts) and, with ``extrema``, two by MAX (minus the minimum,
    the maximum). A tensor this rank lacks (None) enters as zeros and
    ``-inf``; one that ``n`` ranks hold alike (an HSDP shard) enters its sums
    with weight ``1 / n``, so the SUM over all ranks counts it once. The
    reductions themselves are not changed.
    """
    sums, maxes = array("d"), array("d", header)
    for red, copies in zip(reds, replicas, strict=True):
        row = _NONE if red is None else _row(red)
        sums.extend(row[:_WIDTH] if copies == 1 else [value / copies for value in row[:_WIDTH]])
        if extrema:
            maxes.extend(row[_WIDTH:])
    return _tensor(sums), _tensor(maxes)


def _tensor(values: array[float]) -> torch.Tensor:
    """A float64 tensor over ``values`` (no copy; it keeps the array alive)."""
    if not values:
        return torch.empty(0, dtype=torch.float64)
    return torch.frombuffer(values, dtype=torch.float64)


def unpack(
    keys: Sequence[Key],
    merged: dict[Key, Reduction],
    sums: torch.Tensor,
    maxes: Sequence[float] | None,
) -> None:
    """Write the combined values of ``keys`` into the reductions of ``merged`` that this rank holds.

    Sums are written as sums of ``x`` (no shift, scale 1), as `pack` sent them;
    ``maxes`` are the MAX-reduced extrema (two per key), if any.
    """
    summed = sums.tolist()
    for index, key in enumerate(keys):
        red = merged.get(key)
        if red is None:
            continue
        row = index * _WIDTH
        empty = red.numel == 0  # this rank held none of it: take what the others had
        red.numel = round(summed[row])
        if isinstance(red.sum, float):
            red.shift, red.scale = None, 1.0
        if red.sumsq is None and isinstance(red.norm, float):
            red.sumsq = 0.0
        red.norm = None
        for offset, name in enumerate(SUMMED, row + 1):
            if isinstance(getattr(red, name), float) or (empty and name in _GRAD_FIELDS):
                setattr(red, name, summed[offset])
        if maxes is not None and isinstance(red.min, float):
            red.min, red.max = -maxes[2 * index], maxes[2 * index + 1]


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
