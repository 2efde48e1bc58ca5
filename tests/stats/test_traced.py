"""`hookscope.stats.traced` rows against NumPy: exact NaN/Inf/zero counts, min/max in any dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hookscope.stats import ACTIVATION_STATS, plan_for
from hookscope.stats.traced import FIELDS, GRAD_FIELDS, grad_row, merge_row, reduce_row


def _row(t: torch.Tensor) -> dict[str, float]:
    return dict(
        zip(FIELDS, reduce_row(t, plan_for(ACTIVATION_STATS), torch.float64).tolist(), strict=True)
    )


def _tensor(dtype: torch.dtype) -> torch.Tensor:
    values = torch.randn(6, 7, generator=torch.Generator().manual_seed(0))
    values[0, :3] = 0.0
    values[1, 1] = float("nan")
    values[2, 2] = float("inf")
    values[3, 3] = float("-inf")
    values[4, 4] = float("inf")
    return values.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_forward_row_counts_and_extrema_match_numpy(dtype: torch.dtype) -> None:
    t = _tensor(dtype)
    a = t.double().numpy()
    row = _row(t)
    assert row["nan"] == np.isnan(a).sum() == 1
    assert row["inf"] == np.isinf(a).sum() == 3
    assert row["nonzero"] == np.count_nonzero(a) == a.size - 3
    assert np.isnan(row["min"]) and np.isnan(row["max"])  # NaN propagates, as numpy.min
    finite = _tensor(dtype).nan_to_num(0.0, 0.0, 0.0)
    row = _row(finite)
    b = finite.double().numpy()
    assert (row["min"], row["max"]) == (b.min(), b.max())
    assert row["sum"] == pytest.approx(b.sum(), rel=1e-12)
    assert (row["nan"], row["inf"]) == (0, 0)


def test_integer_and_bool_rows_have_no_nonfinite() -> None:
    ints = torch.tensor([[0, 3, -2], [5, 0, 1]])
    row = _row(ints)
    assert (row["min"], row["max"], row["nonzero"], row["nan"], row["inf"]) == (-2, 5, 4, 0, 0)
    flags = torch.tensor([True, False, True])
    row = _row(flags)
    assert (row["sum"], row["min"], row["max"], row["nonzero"]) == (2, 0, 1, 2)


def test_grad_row_and_merge() -> None:
    g = _tensor(torch.float32)
    row = dict(zip(GRAD_FIELDS, grad_row(g, torch.float64).tolist(), strict=True))
    assert (row["numel"], row["nan"], row["inf"]) == (42, 1, 3)
    plan = plan_for(ACTIVATION_STATS)
    low = reduce_row(torch.tensor([-1.0, 2.0]), plan, torch.float64)
    high = reduce_row(torch.tensor([0.5, 7.0]), plan, torch.float64)
    merged = dict(zip(FIELDS, merge_row(low, high).tolist(), strict=True))
    assert (merged["calls"], merged["numel"], merged["min"], merged["max"]) == (2, 4, -1, 7)
