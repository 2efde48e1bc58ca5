"""Exact parameter totals: tied weights, shared modules, frozen, buffers, dtypes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import hookscope


class TiedLM(nn.Module):
    """Embedding and output projection share one weight matrix."""

    def __init__(self, vocab: int = 50, dim: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.proj(self.embed(ids)))


class SharedTwice(nn.Module):
    """One block applied twice, also reachable under a second name."""

    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Linear(6, 6)
        self.alias = self.block
        self.out = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.alias(self.block(x)))


def test_tied_embedding_counted_once() -> None:
    model = TiedLM()
    s = hookscope.summary(model, torch.ones(2, 5, dtype=torch.long))
    # embed 50*8 (shared with head) + proj 8*8+8
    assert s.total_params == 50 * 8 + 8 * 8 + 8 == 472
    naive = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    assert naive == 472 + 400  # what double counting would give
    head = next(r for r in s.rows if r.name == "head")
    assert head.params == 400  # the head does hold the (tied) matrix
    # head: 2*5 tokens x 8 x 50
    assert head.macs == 2 * 5 * 8 * 50


def test_tied_by_storage_not_identity() -> None:
    model = TiedLM()
    model.head.weight = nn.Parameter(model.embed.weight.data)  # new Parameter, same storage
    assert model.head.weight is not model.embed.weight
    assert hookscope.summary(model, torch.ones(1, 3, dtype=torch.long)).total_params == 472


def test_shared_module_rows_twice_params_once() -> None:
    s = hookscope.summary(SharedTwice(), torch.randn(3, 6))
    block_rows = [r for r in s.rows if r.type == "Linear" and r.params == 42]
    assert [r.call for r in block_rows] == [1, 2]
    assert {r.name for r in block_rows} == {"block"}
    assert s.total_params == 42 + 14  # block 6*6+6 once, out 6*2+2
    assert s.macs == 2 * (3 * 6 * 6) + 3 * 6 * 2
    assert "(shared)" in str(s)


def test_frozen_partial_and_trainable() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2)))
    for p in model[1][0].parameters():
        p.requires_grad_(False)
    s = hookscope.summary(model, torch.randn(1, 4))
    assert s.total_params == 20 + 15 + 8
    assert s.trainable_params == 20 + 8
    assert s.frozen_params == 15
    labels = {r.name: r.trainable for r in s.rows}
    assert labels == {"": "partial", "0": "yes", "1": "partial", "1.0": "no", "1.1": "yes"}


def test_buffers_and_bytes_by_dtype() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    model[2].half()
    s = hookscope.summary(model, torch.randn(2, 4), device="meta")
    # BatchNorm1d(4): running_mean 4 + running_var 4 + num_batches_tracked 1 (int64)
    assert s.buffers == 9
    assert s.buffer_bytes == 8 * 4 + 8
    assert s.params_by_dtype == {"float16": 10, "float32": 20 + 8}
    assert s.param_bytes_by_dtype == {"float16": 20, "float32": 28 * 4}
    assert s.param_bytes == 20 + 112


def test_own_and_total_params_per_row() -> None:
    class WithOwn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.ones(3))
            self.fc = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x) * self.scale

    root, fc = hookscope.summary(WithOwn(), torch.randn(1, 3)).rows
    assert (root.own_params, root.params) == (3, 15)
    assert (fc.own_params, fc.params) == (12, 12)


def test_depth_limits_rows_not_totals() -> None:
    model = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), nn.Linear(4, 2))
    full = hookscope.summary(model, torch.randn(1, 4))
    top = hookscope.summary(model, torch.randn(1, 4), depth=1)
    assert [r.name for r in full.rows] == ["", "0", "0.0", "0.1", "1"]
    assert [r.name for r in top.rows] == ["", "0", "1"]
    assert top.macs == full.macs == 16 + 8
    assert top.rows[1].macs == 16
    assert [r.name for r in hookscope.summary(model, torch.randn(1, 4), depth=0).rows] == [""]


def _tied_model() -> nn.Module:
    block = nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6))
    model = nn.Sequential(block, nn.Sequential(block, nn.Linear(6, 6)), nn.Embedding(10, 6))
    model[2].weight = model[1][1].weight = nn.Parameter(torch.randn(6, 6))  # tied across branches
    model[1][1].bias.requires_grad_(False)  # partly frozen
    return model


def _untied_model() -> nn.Module:
    model = nn.Sequential(nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6)), nn.Linear(6, 3))
    model[0][0].bias.requires_grad_(False)
    model[1].requires_grad_(False)
    return model


@pytest.mark.parametrize(
    ("make", "total"),
    [(_tied_model, 6 * 6 + 6 + 12 + 6 * 6 + 6), (_untied_model, 42 + 12 + 21)],
    ids=["tied and shared: merged sets", "no ties: sums"],
)
def test_one_pass_counts_equal_each_module_counted_alone(
    make: Callable[[], nn.Module], total: int
) -> None:
    from hookscope.summary.params import params_by_module, tensor_key

    model = make()
    got = params_by_module(model)
    for module in model.modules():
        unique = {tensor_key(p): p for _, p in module.named_parameters(remove_duplicate=False)}
        own = {tensor_key(p): p for p in module.parameters(recurse=False)}
        count = sum(p.numel() for p in unique.values())
        trained = sum(p.numel() for p in unique.values() if p.requires_grad)
        assert got[id(module)].own == sum(p.numel() for p in own.values())
        assert got[id(module)].total == count
        expected = (
            "" if not count else "yes" if trained == count else "no" if not trained else "partial"
        )
        assert got[id(module)].trainable == expected
    assert got[id(model)].total == total  # in the tied model: block once, tied weight once
