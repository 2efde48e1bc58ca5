"""Model summary: per-module rows, exact parameters, dispatch-level MACs.

``hooks`` (a session's forward pre/post hooks) keep the module-call stack;
`counter.MacCounter` (a ``TorchDispatchMode``) counts every ATen op against it
with the formulas in `formulas`; `params` counts tensors once; `format`
renders the records of `records` as text and HTML; `result.ModelSummary`
(what `summary` returns) is those records with the renderings as methods.
Entry point: `summary`.
"""

from __future__ import annotations

from hookscope.summary.api import summary
from hookscope.summary.records import SummaryData, SummaryFormat, SummaryRow, UncountedOp
from hookscope.summary.result import ModelSummary

__all__ = [
    "ModelSummary",
    "SummaryData",
    "SummaryFormat",
    "SummaryRow",
    "UncountedOp",
    "summary",
]
