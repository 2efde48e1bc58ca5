"""`check_tensor`: exact NaN/Inf counts from one sum, counted only when needed."""

from __future__ import annotations

import math

import pytest
import torch

from hookscope.stats import check_tensor, fetch, summarize


def _counts(t: torch.Tensor) -> dict[str, float]:
    red = check_tensor(t)
    fetch([red])
    return summarize(red)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_counts_match_numpy_in_every_float_dtype(dtype: torch.dtype) -> None:
    t = torch.randn(64, 33).to(dtype)
    t[3, 4] = math.nan
    t[5, 6] = math.inf
    t[7, 8] = -math.inf
    t[9, 10] = math.nan
    assert _counts(t) == {"nan_count": 2.0, "inf_count": 2.0}
    assert _counts(torch.randn(64, 33).to(dtype)) == {"nan_count": 0.0, "inf_count": 0.0}


def test_a_finite_tensor_whose_sum_overflows_counts_zero() -> None:
    assert _counts(torch.full((4,), 3e38)) == {"nan_count": 0.0, "inf_count": 0.0}


def test_non_contiguous_complex_int_bool_and_empty() -> None:
    t = torch.randn(8, 8)
    t[0, 1] = math.nan
    assert _counts(t.t()[1:]) == {"nan_count": 1.0, "inf_count": 0.0}
    z = torch.tensor([1 + 1j, complex(math.nan, 0.0), complex(0.0, math.inf)])
    assert _counts(z) == {"nan_count": 1.0, "inf_count": 1.0}
    assert _counts(torch.arange(5)) == {"nan_count": 0.0, "inf_count": 0.0}
    assert _counts(torch.ones(3, dtype=torch.bool)) == {"nan_count": 0.0, "inf_count": 0.0}
    assert _counts(torch.empty(0)) == {}


def test_cpu_counts_are_host_values_at_once() -> None:
    red = check_tensor(torch.randn(10))
    assert red.host and red.known_finite()
