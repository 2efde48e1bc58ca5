"""Reductions and statistics against NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hookscope.stats import (
    ALL_STATS,
    GRAD_STATS,
    Plan,
    fetch,
    grad_summary,
    merge,
    plan_for,
    reduce_tensor,
    summarize,
)

FULL = Plan(zeros="count")


def stats_of(t: torch.Tensor, plan: Plan = FULL) -> dict[str, float]:
    red = reduce_tensor(t, plan)
    fetch([red])
    return summarize(red)


def numpy_stats(a: np.ndarray) -> dict[str, float]:
    a = a.astype(np.float64).ravel()
    return {
        "mean": a.mean(),
        "std": a.std(),  # population std, ddof=0
        "min": a.min(),
        "max": a.max(),
        "absmax": np.abs(a).max(),
        "rms": math.sqrt((a * a).mean()),
        "norm": math.sqrt((a * a).sum()),
        "zero_frac": float((a == 0).mean()),
    }


@pytest.mark.usefixtures("path")
def test_float32_matches_numpy() -> None:
    t = torch.randn(4, 8, 16, 16) * 2.5 + 0.7
    t[t.abs() < 0.3] = 0.0
    got = stats_of(t)
    ref = numpy_stats(t.numpy())
    for name, value in ref.items():
        assert got[name] == pytest.approx(value, rel=1e-5, abs=1e-6), name
    assert got["nan_count"] == 0.0
    assert got["inf_count"] == 0.0


@pytest.mark.usefixtures("path")
def test_noncontiguous_and_float64_match_numpy() -> None:
    t = torch.randn(6, 10, dtype=torch.float64).t()[::2]
    got = stats_of(t)
    for name, value in numpy_stats(t.numpy()).items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


@pytest.mark.usefixtures("path")
def test_bfloat16_accumulates_in_float32() -> None:
    t = (torch.rand(50_000) + 1.0).to(torch.bfloat16)
    got = stats_of(t)
    ref = numpy_stats(t.float().numpy())
    # a bfloat16 accumulator would be off by far more than 1e-4 over 50k elements
    for name in ("mean", "rms", "min", "max"):
        assert got[name] == pytest.approx(ref[name], rel=1e-4), name


@pytest.mark.usefixtures("path")
def test_exact_nonfinite_counts() -> None:
    t = torch.arange(20, dtype=torch.float32)
    t[[1, 4, 9]] = float("nan")
    t[[2, 3]] = float("inf")
    t[7] = float("-inf")
    got = stats_of(t)
    assert got["nan_count"] == 3.0
    assert got["inf_count"] == 3.0
    assert math.isnan(got["mean"])
    assert math.isnan(got["min"]) and math.isnan(got["max"])  # as numpy.min / numpy.max


@pytest.mark.usefixtures("path")
def test_inf_without_nan_is_counted() -> None:
    t = torch.ones(10)
    t[5] = float("-inf")
    got = stats_of(t)
    assert (got["nan_count"], got["inf_count"]) == (0.0, 1.0)
    assert got["min"] == -math.inf


@pytest.mark.usefixtures("eager")
def test_finite_cpu_tensor_skips_the_counting_reductions() -> None:
    red = reduce_tensor(torch.randn(100), FULL)
    # counts were settled in the hook without isnan/isinf passes: plain floats
    assert red.nan == 0.0 and not isinstance(red.nan, torch.Tensor)
    bad = reduce_tensor(torch.tensor([1.0, math.nan]), FULL)
    assert isinstance(bad.nan, torch.Tensor)


@pytest.mark.usefixtures("path")
def test_nonneg_zero_count_equals_count_nonzero() -> None:
    t = torch.relu(torch.randn(3, 1000))
    fast = stats_of(t, Plan(zeros="nonneg"))["zero_frac"]
    assert fast == pytest.approx(float((t == 0).double().mean()), abs=1e-12)


@pytest.mark.usefixtures("path")
def test_integer_tensor() -> None:
    t = torch.tensor([[0, 3, -5], [7, 0, 2]])
    got = stats_of(t)
    for name, value in numpy_stats(t.numpy()).items():
        assert got[name] == pytest.approx(value), name
    assert got["nan_count"] == 0.0


@pytest.mark.usefixtures("path")
def test_bool_tensor_gets_what_applies() -> None:
    got = stats_of(torch.tensor([True, False, False, True, True]))
    assert got == {"mean": 0.6, "min": 0.0, "max": 1.0, "zero_frac": pytest.approx(0.4)}


@pytest.mark.usefixtures("path")
def test_complex_uses_magnitude() -> None:
    t = torch.tensor([3 + 4j, 0j, -1j], dtype=torch.complex64)
    got = stats_of(t)
    assert got["mean"] == pytest.approx((5 + 0 + 1) / 3)
    assert got["max"] == pytest.approx(5.0)
    assert got["zero_frac"] == pytest.approx(1 / 3)


@pytest.mark.usefixtures("path")
def test_empty_and_meta_tensors_give_no_stats() -> None:
    assert stats_of(torch.empty(0, 4)) == {}
    assert stats_of(torch.empty(3, device="meta")) == {}


@pytest.mark.usefixtures("path")
def test_merge_equals_stats_of_concatenation() -> None:
    a, b = torch.randn(100) * 3, torch.randn(50) + 4
    ra, rb = reduce_tensor(a, FULL), reduce_tensor(b, FULL)
    fetch([ra, rb])
    got = summarize(merge(ra, rb))
    for name, value in numpy_stats(torch.cat([a, b]).numpy()).items():
        assert got[name] == pytest.approx(value, rel=1e-5), name


@pytest.mark.usefixtures("path")
def test_fetch_mixes_dtypes_in_one_call() -> None:
    reds = [
        reduce_tensor(t, FULL) for t in (torch.randn(5), torch.arange(4), torch.randn(3).half())
    ]
    fetch(reds)
    assert all(isinstance(r.min, float) for r in reds)
    assert reds[1].max == 3.0


def test_plan_for_takes_only_needed_reductions() -> None:
    assert plan_for(["mean"]) == Plan(sum=True, squares=False, extrema=False, zeros="none")
    assert plan_for(["absmax", "zero_frac"], zeros="nonneg") == Plan(
        sum=False, squares=False, extrema=True, zeros="nonneg"
    )
    assert set(stats_of(torch.randn(10))) <= set(ALL_STATS)


@pytest.mark.usefixtures("eager")
def test_summarize_refuses_unfetched() -> None:
    with pytest.raises(ValueError, match="fetch"):
        summarize(reduce_tensor(torch.randn(4), FULL))


@pytest.mark.usefixtures("eager")
def test_merge_of_dot_and_norm_paths() -> None:
    a = torch.randn(20, 30)  # contiguous: sum of squares by dot
    b = torch.randn(30, 20).t()  # non-contiguous: by vector_norm
    ra, rb = reduce_tensor(a, FULL), reduce_tensor(b, FULL)
    assert ra.sumsq is not None and rb.norm is not None
    fetch([ra, rb])
    got = summarize(merge(ra, rb))
    both = torch.cat([a.ravel(), b.ravel()]).double().numpy()
    assert got["std"] == pytest.approx(both.std(), rel=1e-5)
    assert got["norm"] == pytest.approx(math.sqrt((both * both).sum()), rel=1e-5)


def test_summarize_needs_fetched_values_and_fetch_marks_them(eager: None) -> None:
    t = torch.arange(12.0).reshape(3, 4)
    red = reduce_tensor(t, FULL)
    assert not red.host and isinstance(red.sum, torch.Tensor)  # eager: on the device
    with pytest.raises(ValueError, match="fetch"):
        summarize(red)
    fetch([red])
    assert red.host and isinstance(red.sum, float)
    got = summarize(red)
    assert got["mean"] == pytest.approx(5.5) and got["max"] == 11.0
    fetch([red])  # nothing left to move: the same values
    assert summarize(red) == got


def test_grad_summary_is_summarize_of_the_gradient_stats() -> None:
    gen = torch.Generator().manual_seed(3)
    big = torch.randn(64, 32, generator=gen) * 1e3 + 5e3  # moments around a shift
    with_nan = torch.randn(100, generator=gen)
    with_nan[7] = math.nan
    with_inf = torch.randn(100, generator=gen)
    with_inf[3] = -math.inf
    tensors = [torch.randn(3, 4, 5, generator=gen), big, with_nan, with_inf, torch.zeros(8),
               torch.randn(5, generator=gen, dtype=torch.float64), torch.empty(0)]  # fmt: skip
    plans = [Plan(sum=False, squares=True, extrema=False), Plan(), FULL]
    quick = 0
    for t in tensors:
        for plan in plans:
            red = reduce_tensor(t, plan)
            fetch([red])
            everything = summarize(red)
            expected = {s: everything[s] for s in GRAD_STATS if s in everything}
            got = grad_summary(red)
            assert list(got) == list(expected)
            assert all(got[s] == expected[s] or (math.isnan(got[s]) and math.isnan(expected[s]))
                       for s in got)  # fmt: skip
            quick += bool(red.host and not red.shift and red.scale == 1.0 and red.numel)
    assert quick > 0  # the short path was taken
