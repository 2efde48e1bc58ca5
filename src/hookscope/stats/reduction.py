"""The reductions of one tensor (`Reduction`), below both `hookscope.stats.reduce` and `accuracy`.

`hookscope.stats.reduce` takes them and `hookscope.stats.accuracy` repairs
them; both import this module, neither imports the other for the type.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

__all__ = ["Kind", "Reduction", "Value"]

#: How a tensor is reduced (`hookscope.stats.reduce.kind_of`).
Kind = Literal["float", "complex", "int", "bool", "skip"]
#: A reduction's field: a 0-d device tensor until fetched, then a host float (or None).
Value = torch.Tensor | float | None


class Reduction:
    """The reductions of one tensor: 0-d device tensors until `fetch`, then floats.

    ``sum``, ``sumsq`` and ``norm`` are of ``x / scale - shift`` (``shift``
    None means 0; ``scale`` is a host float, 1.0 unless the sums of ``x``
    would overflow); ``min`` and ``max`` are of ``x`` itself.
    """

    __slots__ = (
        "host",
        "inf",
        "kind",
        "max",
        "min",
        "nan",
        "nonzero",
        "norm",
        "numel",
        "packed",
        "packed_fields",
        "scale",
        "shift",
        "sum",
        "sumsq",
    )

    def __init__(self, kind: Kind, numel: int) -> None:
        self.kind: Kind = kind
        self.numel = numel
        self.sum: Value = None
        self.norm: Value = None
        self.sumsq: Value = None
        self.shift: Value = None
        self.scale = 1.0
        self.min: Value = None
        self.max: Value = None
        self.nonzero: Value = None
        self.nan: Value = None
        self.inf: Value = None
        #: Several fields in one device vector (the fused path), named by ``packed_fields``.
        self.packed: torch.Tensor | None = None
        self.packed_fields: tuple[str, ...] = ()
        #: Every field is known to be a host float or None: `fetch` skips it and
        #: `summarize` need not check (set by `fetch`, `merge` and whoever builds
        #: a reduction from host values, e.g. a compiled graph's fetched rows).
        self.host = False

    def known_finite(self) -> bool:
        """True when, already in the hook, the counts say no NaN or Inf (host floats, both 0)."""
        return (
            isinstance(self.nan, float) and isinstance(self.inf, float) and not self.nan + self.inf
        )

    def nonfinite(self) -> bool:
        """True when (after `fetch`) a NaN or Inf was seen; exact when counts exist."""
        if self.nan is not None and self.inf is not None:
            return float(self.nan) + float(self.inf) > 0
        return any(
            isinstance(v, float) and not math.isfinite(v)
            for v in (self.sum, self.norm, self.sumsq, self.min, self.max)
        )
