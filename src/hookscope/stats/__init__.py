"""Pure tensor statistics: no hooks, no I/O.

`reduce_tensor` launches a tensor's reductions on its device without
synchronising, `fetch` brings a step's worth of them to the host at once,
`summarize` turns them into named statistics; `tensors_in` finds the tensors
inside nested outputs with readable paths.
"""

from __future__ import annotations

from hookscope.stats.check import check_tensor
from hookscope.stats.reduce import (
    ACTIVATION_STATS,
    ALL_STATS,
    GRAD_STATS,
    Plan,
    fetch,
    grad_summary,
    kind_of,
    merge,
    plan_for,
    reduce_tensor,
    reduce_with_relu,
    summarize,
    unshift,
)
from hookscope.stats.reduction import Reduction
from hookscope.stats.walk import tensors_in

__all__ = [
    "ACTIVATION_STATS",
    "ALL_STATS",
    "GRAD_STATS",
    "Plan",
    "Reduction",
    "check_tensor",
    "fetch",
    "grad_summary",
    "kind_of",
    "merge",
    "plan_for",
    "reduce_tensor",
    "reduce_with_relu",
    "summarize",
    "tensors_in",
    "unshift",
]
