"""Tidy pandas frames of monitor records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hookscope.errors import require_extra
from hookscope.monitor.records import StepResult

#: Columns of `to_frame`, in order.
COLUMNS = ("step", "phase", "module", "tensor", "stat", "value", "rank")


def to_frame(results: Iterable[StepResult]) -> Any:
    """A ``DataFrame`` with one row per statistic: step, phase, module, tensor, stat, value, rank.

    ``rank`` is the rank that took the records (0 outside torch.distributed);
    with ``Monitor(ranks="reduce")`` the values are all ranks' combined, the
    same in every rank's frame.

    Raises:
        MissingExtraError: pandas is not installed (``hookscope[pandas]``).
    """
    pd: Any = require_extra("pandas", "pandas")
    rows = [
        (result.step, r.phase, r.module, r.tensor, r.stat, r.value, result.rank)
        for result in results
        for r in result.records
    ]
    frame = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    return frame.astype({"step": "int64", "value": "float64", "rank": "int64"})
