"""Numerical guarantees of the statistics against NumPy, on the kernel and on eager ops.

Finite input gives finite statistics; +Inf and -Inf give ``absmax = inf``;
mean and std stay within 1e-3 of NumPy's (float64, exact sum) also at the
edges of the float range and when ``|mean| >> std``; `summarize` never raises.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from hookscope.stats import ALL_STATS, Plan, Reduction, fetch, merge, reduce_tensor, summarize

FULL = Plan(zeros="count")
F32_MAX = torch.finfo(torch.float32).max


def stats_of(t: torch.Tensor) -> dict[str, float]:
    red = reduce_tensor(t, FULL)
    fetch([red])
    return summarize(red)


def reference(t: torch.Tensor) -> dict[str, float]:
    """NumPy in float64 on ``t / 2**k`` (so squares stay in range), scaled back; exact mean."""
    a = t.double().numpy().ravel()
    scale = math.ldexp(1.0, math.frexp(float(np.abs(a).max()))[1])
    u = a / scale
    return {
        "mean": math.fsum(a) / a.size,
        "std": float(u.std()) * scale,
        "rms": math.sqrt(float((u * u).mean())) * scale,
        "absmax": float(np.abs(a).max()),
    }


def gaussian(n: int, mean: float, std: float, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(n)
    return (mean + std * torch.randn(n, generator=g, dtype=torch.float64)).to(dtype)


# The cases (#14, "Monitor numerics"), plus sizes that span the
# kernel's blocks (2048) and its parts for helper threads (65536).
CASES = {
    "fp32 |x| 1e19, 10k": gaussian(10_000, 1e19, 1e18, torch.float32),
    "fp32 |x| 1e19, 300k": gaussian(300_000, -2e19, 3e18, torch.float32),
    "fp32 at float32 max": torch.full((5_000,), F32_MAX),
    "fp32 +-float32 max": torch.tensor([F32_MAX, -F32_MAX] * 3000),
    "fp32 1e20 -1e20 1": torch.tensor([1e20] * 1000 + [-1e20] * 1000 + [1.0]),
    "bf16 3e38": torch.full((5_000,), 3e38, dtype=torch.bfloat16),
    "fp64 1.3e154+": gaussian(10_000, 2e154, 1e153, torch.float64),
    "fp64 1e300": gaussian(20_000, 1e300, 1e299, torch.float64),
    "fp32 1e4 + 0.01 randn": gaussian(100_000, 1e4, 0.01, torch.float32),
    "fp32 1e4 + 0.01 randn, 1M": gaussian(1_000_000, 1e4, 0.01, torch.float32),
    "fp64 1e8 + 1e-3 randn": gaussian(100_000, 1e8, 1e-3, torch.float64),
    "bf16 1e3 + 1 randn": gaussian(50_000, 1e3, 1.0, torch.bfloat16),
    "fp32 outlier first": torch.cat(
        [torch.tensor([1e6]), gaussian(70_000, 5.0, 0.01, torch.float32)]
    ),
}


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("case", list(CASES))
def test_matches_numpy_at_the_edges(case: str) -> None:
    t = CASES[case]
    got, ref = stats_of(t), reference(t)
    assert (got["nan_count"], got["inf_count"]) == (0.0, 0.0)
    for name in ALL_STATS:
        if name in got:
            assert math.isfinite(got[name]), (name, got[name])
    for name, value in ref.items():
        assert got[name] == pytest.approx(value, rel=1e-3, abs=1e-300), name


@pytest.mark.usefixtures("path")
def test_plus_and_minus_inf_give_absmax_inf() -> None:
    t = torch.tensor([1.0, math.inf, -math.inf, 2.0] * 5000)
    got = stats_of(t)
    assert got["absmax"] == math.inf
    assert (got["min"], got["max"]) == (-math.inf, math.inf)
    assert (got["nan_count"], got["inf_count"]) == (0.0, 10_000.0)


@pytest.mark.usefixtures("path")
def test_merged_calls_keep_the_digits() -> None:
    a = gaussian(30_000, 1e4, 0.01, torch.float32)
    b = gaussian(40_000, 1e4 + 0.05, 0.02, torch.float32)
    c = gaussian(2_000, 3e38, 1e36, torch.float32)
    for x, y in ((a, b), (b, c)):
        rx, ry = reduce_tensor(x, FULL), reduce_tensor(y, FULL)
        fetch([rx, ry])
        got, ref = summarize(merge(rx, ry)), reference(torch.cat([x, y]))
        for name, value in ref.items():
            assert got[name] == pytest.approx(value, rel=1e-3), name


EXTREMES = [0.0, -0.0, 1.0, -1e308, 1e308, math.inf, -math.inf, math.nan, None]


def test_summarize_never_raises() -> None:
    """Any mix of fetched values, however extreme, gives statistics and no exception."""
    for total, sumsq, norm, shift in itertools.product(EXTREMES, repeat=4):
        red = Reduction("float", 7)
        red.sum, red.sumsq, red.norm, red.shift = total, sumsq, norm, shift
        red.min, red.max, red.nan, red.inf = -1e308, 1e308, 0.0, 0.0
        summarize(red)
        other = Reduction("float", 3)
        other.sum, other.sumsq = 1.0, 1e308
        summarize(merge(red, other))
