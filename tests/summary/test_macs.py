"""MACs per op family, attribution, and the attention models other tools miscount."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import hookscope
from hookscope.summary.counter import MacCounter
from hookscope.zoo import SmallCNN, resnet50_like
from tests.fixtures.vision_models import ConvNeXtBlock, SwinBlock, swin_t, vit, vit_b_16


class Fn(nn.Module):
    """Wraps a function of the inputs so the summary has a module to run."""

    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


def macs(fn, *inputs: torch.Tensor, device: str | None = None) -> int:  # type: ignore[no-untyped-def]
    return hookscope.summary(Fn(fn), *inputs, device=device).macs


DEVICES = [None, "cpu"]  # None: the meta run


@pytest.mark.parametrize("device", DEVICES)
def test_matrix_products(device: str | None) -> None:
    a, b = torch.randn(4, 5), torch.randn(5, 6)
    assert macs(lambda x, y: x @ y, a, b, device=device) == 4 * 5 * 6
    assert macs(torch.mm, a, b, device=device) == 4 * 5 * 6
    assert macs(lambda x, y: torch.einsum("ik,kj->ij", x, y), a, b, device=device) == 120
    assert macs(torch.mv, a, torch.randn(5), device=device) == 4 * 5
    assert macs(torch.dot, torch.randn(7), torch.randn(7), device=device) == 7
    p, q = torch.randn(3, 4, 5), torch.randn(3, 5, 6)
    assert macs(torch.bmm, p, q, device=device) == 3 * 4 * 5 * 6
    assert macs(lambda x, y: torch.baddbmm(torch.zeros(3, 4, 6), x, y), p, q, device=device) == 360
    # matmul broadcasting (2, 3, 4, 5) @ (5, 6): 2*3*4 rows of 5x6 products.
    assert macs(torch.matmul, torch.randn(2, 3, 4, 5), b, device=device) == 2 * 3 * 4 * 5 * 6


@pytest.mark.parametrize("device", DEVICES)
def test_linear_functional_and_module(device: str | None) -> None:
    x = torch.randn(2, 7, 16)
    w, bias = torch.randn(32, 16), torch.randn(32)
    # 2*7 tokens x 16 in x 32 out; the bias is ignored.
    assert macs(lambda t: F.linear(t, w, bias), x, device=device) == 2 * 7 * 16 * 32
    assert hookscope.summary(nn.Linear(16, 32), x, device=device).macs == 2 * 7 * 16 * 32


@pytest.mark.parametrize("device", DEVICES)
def test_convolutions(device: str | None) -> None:
    x = torch.randn(2, 8, 10, 10)
    # out 2x16x8x8, each from 8 in-channels x 3x3 = 72 MACs
    conv = nn.Conv2d(8, 16, 3)
    assert hookscope.summary(conv, x, device=device).macs == 2 * 16 * 8 * 8 * 8 * 9
    # groups=4: each output sees 8/4 = 2 channels; padding 1 keeps 10x10
    grouped = nn.Conv2d(8, 16, 3, padding=1, groups=4)
    assert hookscope.summary(grouped, x, device=device).macs == 2 * 16 * 10 * 10 * 2 * 9
    # transposed: every input element spreads over 4 out-channels x 2x2 kernel
    up = nn.ConvTranspose2d(8, 4, 2, stride=2)
    assert hookscope.summary(up, x, device=device).macs == 2 * 8 * 10 * 10 * 4 * 4
    conv1d = nn.Conv1d(3, 5, 3)
    assert hookscope.summary(conv1d, torch.randn(1, 3, 12), device=device).macs == 10 * 5 * 3 * 3
    w = torch.randn(16, 8, 1, 1)
    assert macs(lambda t: F.conv2d(t, w), x, device=device) == 2 * 16 * 10 * 10 * 8


@pytest.mark.parametrize("device", DEVICES)
def test_scaled_dot_product_attention(device: str | None) -> None:
    q = torch.randn(2, 4, 10, 8)  # batch 2, heads 4, 10 queries, head dim 8
    k, v = torch.randn(2, 4, 12, 8), torch.randn(2, 4, 12, 8)
    # QK^T: 2*4*10*12*8, AV: the same
    expected = 2 * (2 * 4 * 10 * 12 * 8)
    assert macs(F.scaled_dot_product_attention, q, k, v, device=device) == expected


def _mha_expected(batch: int, length: int, embed: int) -> int:
    projections = 4 * batch * length * embed * embed  # q, k, v and out projections
    attention = 2 * batch * length * length * embed  # QK^T and AV over all heads
    return projections + attention


@pytest.mark.parametrize("device", DEVICES)
def test_multihead_attention_fused_and_unfused(device: str | None) -> None:
    mha = nn.MultiheadAttention(32, 4, batch_first=True)
    x = torch.randn(2, 9, 32)
    model = Fn(lambda t: mha(t, t, t, need_weights=False)[0])
    model.mha = mha  # a child, so the summary's eval() reaches it
    s = hookscope.summary(model, x, device=device)
    assert s.macs == _mha_expected(2, 9, 32)
    if device == "cpu":  # eval + no_grad on CPU takes the fused kernel
        assert "aten._native_multi_head_attention.default" in s.macs_by_op


def test_transformer_encoder_layer_fused_kernel_formula() -> None:
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True).eval()
    expected = _mha_expected(2, 9, 32) + 2 * 2 * 9 * 32 * 64  # attention + two FFN linears
    # Without module hooks PyTorch takes the fused kernel; count it directly.
    counter = MacCounter([])
    with torch.no_grad(), counter:
        layer(torch.randn(2, 9, 32))
    assert list(counter.by_op) == ["aten._transformer_encoder_layer_fwd.default"]
    assert counter.total == expected
    # Under summary's hooks PyTorch falls back to the unfused path: same count.
    assert hookscope.summary(layer, torch.randn(2, 9, 32), device="cpu").macs == expected
    assert hookscope.summary(layer, torch.randn(2, 9, 32)).macs == expected


def test_macs_attributed_to_innermost_module() -> None:
    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(4, 4, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x) @ x.T  # the matmul runs in Outer's own forward

    s = hookscope.summary(Outer(), torch.randn(3, 4))
    root, inner = s.rows
    assert inner.macs == inner.own_macs == 3 * 4 * 4
    assert root.own_macs == 3 * 4 * 3
    assert root.macs == 3 * 4 * 4 + 3 * 4 * 3 == s.macs


def test_vit_small_hand_computed() -> None:
    model = vit(image_size=32, patch_size=8, layers=2, heads=2, dim=16, mlp_dim=32, num_classes=5)
    tokens = (32 // 8) ** 2 + 1  # 16 patches + class token
    patch = 16 * 16 * 3 * 8 * 8  # 16 positions x 16 out x (3 x 8 x 8)
    block = _mha_expected(1, tokens, 16) + 2 * tokens * 16 * 32
    expected = patch + 2 * block + 16 * 5
    assert hookscope.summary(model, input_size=(1, 3, 32, 32)).macs == expected
    assert hookscope.summary(model, input_size=(1, 3, 32, 32), device="cpu").macs == expected


def test_swin_block_hand_computed() -> None:
    dim, heads, window, size = 16, 2, 4, 8
    block = SwinBlock(dim, heads, window, shift=2)
    tokens = size * size
    qkv, proj = tokens * dim * 3 * dim, tokens * dim * dim
    # every token attends to the window*window tokens of its window: QK^T and AV
    attention = 2 * tokens * window * window * dim
    mlp = 2 * tokens * dim * 4 * dim
    s = hookscope.summary(block, input_size=(1, size, size, dim))
    assert s.macs == qkv + attention + proj + mlp
    assert hookscope.summary(block, input_size=(1, size, size, dim), device="cpu").macs == s.macs


def test_convnext_block_hand_computed() -> None:
    dim, size = 8, 6
    depthwise = size * size * dim * 7 * 7  # each output: one channel x 7x7
    mlp = 2 * size * size * dim * 4 * dim
    s = hookscope.summary(ConvNeXtBlock(dim), input_size=(2, dim, size, size))
    assert s.macs == 2 * (depthwise + mlp)


def test_published_vision_statistics() -> None:
    # torchvision's published GFLOPS (multiply-accumulates): ResNet-50 4.09,
    # ViT-B/16 17.56, Swin-T 4.49; parameters 25,557,032 / 86,567,656 / 28,288,354.
    for factory, gmacs, params in (
        (resnet50_like, 4.09, 25_557_032),
        (vit_b_16, 17.56, 86_567_656),
        (swin_t, 4.49, 28_288_354),
    ):
        with torch.device("meta"):
            model = factory()
        s = hookscope.summary(model, input_size=(1, 3, 224, 224))
        assert round(s.macs / 1e9, 2) == gmacs, factory.__name__
        assert s.total_params == params
        assert s.flops == 2 * s.macs


def test_ops_without_formula_are_listed() -> None:
    s = hookscope.summary(Fn(lambda t: torch.fft.rfft(t).abs() + t.sum()), torch.randn(16))
    unknown = {op.op for op in s.unknown_ops}
    assert any("fft" in name for name in unknown)
    conv = {op.op for op in s.uncounted_ops if op.category == "convention"}
    assert "aten.sum.default" in conv and "aten.add.Tensor" in conv
    assert s.macs == 0
    assert "Not counted, no MAC formula: aten._fft_r2c" in str(s)


def test_bypassed_module_still_counted_in_parent() -> None:
    # SmallCNN(plant_bypass=True) calls self.head.forward(x): no hooks fire for
    # head, so no row, but its matmul still runs through the dispatcher.
    s = hookscope.summary(SmallCNN(plant_bypass=True), input_size=(1, 3, 32, 32))
    assert "head" not in {r.name for r in s.rows}
    assert s.macs == hookscope.summary(SmallCNN(), input_size=(1, 3, 32, 32)).macs
    assert s.rows[0].own_macs == 512 * 10  # the head's addmm, attributed to the root


def test_exception_caught_inside_model_keeps_stack_right() -> None:
    class Recovering(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bad = nn.Linear(5, 5)
            self.good = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            try:
                return self.bad(x)  # wrong width: raises, caught here
            except RuntimeError:
                return self.good(x)  # runs while the exception is being handled

    s = hookscope.summary(Recovering(), torch.randn(2, 4))
    good = next(r for r in s.rows if r.name == "good")
    assert good.depth == 1 and good.macs == 2 * 4 * 3
    assert s.rows[0].macs == s.macs == 2 * 4 * 3


def test_modules_that_never_ran_are_named() -> None:
    s = hookscope.summary(SmallCNN(plant_bypass=True), input_size=(1, 3, 32, 32))
    # head.forward() is called directly: it ran, without hooks (as the doctor says)
    assert s.not_run == () and s.called_directly == ("head",)
    assert "run through a direct .forward() call, their hooks skipped (1): head" in str(s)
    assert hookscope.summary(SmallCNN(), input_size=(1, 3, 32, 32)).not_run == ()


@pytest.mark.parametrize("device", DEVICES)
def test_recurrent_layers(device: str | None) -> None:
    x = torch.randn(2, 5, 8)  # batch 2, 5 steps, 8 features: 10 (step, batch) positions
    lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
    # 4 gates x 16 hidden x (inputs + hidden) per position; layer 2 reads 16 features
    expected = 10 * 4 * 16 * (8 + 16) + 10 * 4 * 16 * (16 + 16)
    s = hookscope.summary(lstm, x, device=device)
    assert s.macs == expected
    assert s.unknown_ops == ()
    gru = nn.GRU(8, 16, batch_first=True)
    assert hookscope.summary(gru, x, device=device).macs == 10 * 3 * 16 * (8 + 16)
