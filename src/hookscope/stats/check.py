"""The cheapest exact NaN/Inf check of a tensor: what a Monitor's sentinel takes on unrecorded steps.

A NaN or an Inf anywhere in a tensor makes its sum non-finite, so one
``sum`` (a vectorised read, about half the cost of the one-pass statistics
kernel on CPU) tells a finite tensor from one to count. On the CPU the sum is
a host value: reading it is not a synchronisation, and exact counts are
taken only when it is not finite (a finite tensor whose sum overflows is
counted too, and gets counts of 0). On other devices branching would
synchronise, so the counts are always taken there (two reductions, no host
read until `hookscope.stats.fetch`).
"""

from __future__ import annotations

import math

import torch

from hookscope.stats.reduce import kind_of
from hookscope.stats.reduction import Reduction


def check_tensor(tensor: torch.Tensor) -> Reduction:
    """A `Reduction` holding only exact ``nan`` and ``inf`` counts of ``tensor``.

    Integer and bool tensors hold no NaN/Inf (counts 0, nothing read); empty,
    meta and non-strided tensors get no counts (kind ``"skip"``); complex
    tensors are checked through both their parts.
    """
    kind = kind_of(tensor)
    red = Reduction(kind, tensor.numel())
    if kind == "skip" or red.numel == 0:
        red.kind = "skip"
        return red
    if kind in ("int", "bool"):
        red.kind = "float"  # only the counts are read: no mean of a bool sum
        red.nan = red.inf = 0.0
        red.host = True
        return red
    t = tensor.detach()
    if kind == "complex":
        t = torch.view_as_real(t)
    if t.device.type == "cpu":
        total = float(t.sum())
        if math.isfinite(total):
            red.nan = red.inf = 0.0
        else:
            red.nan = float(torch.isnan(t).sum())
            red.inf = float(torch.isinf(t).sum())
        red.host = True
        return red
    red.nan = torch.isnan(t).sum()
    red.inf = torch.isinf(t).sum()
    return red
