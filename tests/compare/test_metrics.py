"""The error metrics on tensors whose answers are known by hand."""

from __future__ import annotations

import math

import pytest
import torch

from hookscope.compare import tensor_metrics
from hookscope.compare.metrics import MetricsBatch


def test_identical_tensors_have_no_error() -> None:
    a = torch.randn(4, 5)
    m = tensor_metrics(a, a.clone(), rtol=0.0, atol=0.0)
    assert (m.max_abs, m.max_rel, m.frac_outside) == (0.0, 0.0, 0.0)
    assert m.sqnr_db == math.inf
    assert m.cosine == pytest.approx(1.0)
    assert not m.exceeds()


def test_one_element_off() -> None:
    a = torch.ones(100)
    b = a.clone()
    b[7] = 1.5
    m = tensor_metrics(a, b, rtol=0.1, atol=0.0)
    assert m.max_abs == pytest.approx(0.5)
    assert m.max_rel == pytest.approx(0.5)
    assert m.frac_outside == pytest.approx(0.01)
    assert m.sqnr_db == pytest.approx(10 * math.log10(100 / 0.25))
    assert m.cosine == pytest.approx(100.5 / math.sqrt(100 * (99 + 2.25)))
    assert m.exceeds()
    assert tensor_metrics(a, b, rtol=0.5, atol=0.0).frac_outside == 0.0


def test_dtypes_are_compared_in_float64() -> None:
    a = torch.linspace(-3, 3, 50)
    b = a.to(torch.bfloat16)
    m = tensor_metrics(a, b, rtol=0.0, atol=0.0)
    assert 0 < m.max_abs <= 2**-7 * 3
    assert m.sqnr_db > 40


def test_nonfinite_values() -> None:
    a = torch.tensor([1.0, math.inf, 3.0])
    same = tensor_metrics(a, a.clone(), rtol=0.0, atol=0.0)
    assert same.frac_outside == 0.0 and same.max_abs == 0.0
    b = torch.tensor([1.0, math.inf, math.nan])
    m = tensor_metrics(a, b, rtol=0.0, atol=0.0)
    assert m.max_abs == math.inf
    assert m.frac_outside == pytest.approx(1 / 3)
    assert m.sqnr_db == -math.inf


def test_zero_reference_and_empty() -> None:
    m = tensor_metrics(torch.zeros(3), torch.tensor([0.0, 1e-3, 0.0]), rtol=0.0, atol=1e-2)
    assert m.frac_outside == 0.0 and m.cosine == 0.0 and m.sqnr_db == -math.inf
    assert m.max_rel > 1e30
    assert tensor_metrics(torch.zeros(0), torch.zeros(0), rtol=0, atol=0).numel == 0


def test_shapes_must_match() -> None:
    with pytest.raises(ValueError, match=r"\(2,\) vs \(3,\)"):
        tensor_metrics(torch.zeros(2), torch.zeros(3), rtol=0, atol=0)


def test_batch_matches_float64_by_hand_with_one_transfer() -> None:
    torch.manual_seed(0)
    pairs = []
    for n in (10, 1000, 300_000):
        a = torch.randn(n) * 3
        pairs.append((a, a + torch.randn(n) * 1e-4))
    pairs.append((torch.randn(7, 5), torch.randn(7, 5)))  # unrelated: cosine near 0
    pairs.append((torch.randn(4).t(), torch.randn(4).t()))
    pairs.append((torch.randn(6, 4).t(), torch.randn(4, 6)))  # non-contiguous reference
    batch = MetricsBatch(rtol=1e-3, atol=1e-5)
    slots = [batch.add(a, b) for a, b in pairs]
    results = batch.results()
    for slot, (a, b) in zip(slots, pairs, strict=True):
        a64, b64 = a.double(), b.double()
        d = b64 - a64
        got = results[slot]
        assert got.max_abs == pytest.approx(d.abs().max().item(), rel=1e-6)
        assert got.sqnr_db == pytest.approx(
            10 * math.log10(a64.square().sum().item() / d.square().sum().item()), rel=1e-5
        )
        cos = (a64 * b64).sum() / (a64.norm() * b64.norm())
        # float32 norms: the cosine is exact to ~1e-6 of |d| / |a| (1e-11 for near twins)
        assert got.cosine == pytest.approx(cos.item(), abs=1e-6 * (d.norm() / a64.norm()).item())
        outside = (d.abs() > 1e-5 + 1e-3 * a64.abs()).double().mean().item()
        assert got.frac_outside == pytest.approx(outside, abs=1e-6)
        assert got == tensor_metrics(a, b, rtol=1e-3, atol=1e-5)
