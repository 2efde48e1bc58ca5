"""fp32 vs bf16 autocast on GPT-2 tiny, and eager vs torch.compile."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

import hookscope
from hookscope.compare.compiled import CompileFallbackWarning, compiled_run
from tests.compare.models import gpt2_ids, gpt2_tiny, resnet_tiny


def test_bf16_autocast_on_gpt2_worst_layers_and_modes_agree() -> None:
    model = gpt2_tiny()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)
    propagate = hookscope.compare(model, autocast, gpt2_ids())
    isolate = hookscope.compare(model, autocast, gpt2_ids(), mode="isolate")
    # Both modes: the first bf16 matmul (the attention's QKV projection) starts it.
    assert propagate.culprit is not None and isolate.culprit is not None
    assert propagate.culprit.name == isolate.culprit.name == "transformer.h.0.attn.c_attn"
    # Isolate: own errors come from what autocast runs in bf16 — the matmuls and the
    # attention (QK^T, softmax, AV inside GPT2Attention); layer norms, GELU, dropout
    # and embeddings run in fp32 and add nothing of their own.
    own = {row.type for row in isolate.exceeded}
    assert own == {"Conv1D", "GPT2Attention", "Linear", "GPT2LMHeadModel"}
    for row in isolate.rows:
        if row.type in ("LayerNorm", "NewGELUActivation", "Dropout", "Embedding"):
            assert row.max_abs == 0.0, row.label
    # Propagate: the largest absolute errors show at the layer norms, which scale
    # up the small inherited error (their own error is zero, see above).
    names = [r.name for r in propagate.rows]
    leaves = [r for r in propagate.rows if not any(n.startswith(f"{r.name}.") for n in names)]
    top = sorted(leaves, key=lambda r: -r.max_abs)[:3]
    assert [r.type for r in top] == ["LayerNorm"] * 3
    assert top[0].name == "transformer.ln_f"
    # Consistency: whatever has an error of its own also shows it downstream.
    assert {r.label for r in isolate.exceeded} <= {r.label for r in propagate.exceeded}
    for row in isolate.exceeded:
        assert 30 < row.sqnr_db < 70  # bf16 keeps 8 bits: roughly 50 dB


def _compiled(model: nn.Module) -> nn.Module:
    torch._dynamo.reset()  # graphs cached by another test would run without the hooks
    return torch.compile(model)


@pytest.mark.slow
@pytest.mark.parametrize("build", [gpt2_tiny, resnet_tiny])
def test_eager_vs_torch_compile_agrees_and_measures_compiled_code(
    build: Callable[[], nn.Module],
) -> None:
    model = build()
    x = gpt2_ids() if build is gpt2_tiny else torch.randn(2, 3, 32, 32)
    # ResNet-tiny's 17 convolutions need more than dynamo's default 8 recompiles of
    # Conv2d.forward: past it they would run eagerly. pytest turns the
    # CompileFallbackWarning that would say so into an error.
    cmp = hookscope.compare(model, _compiled, x)
    assert cmp.label_b.startswith(f"torch.compile({type(model).__name__}) (forward: one graph")
    assert cmp.culprit is None, cmp.culprit.label
    assert not cmp.unmatched_a and not cmp.unmatched_b
    assert all(r.name == r.name.removeprefix("_orig_mod.") for r in cmp.rows)
    assert all(r.cosine > 0.99999 for r in cmp.rows)
    # Inductor's kernels round differently from eager ones: most rows differ in the
    # last bits. An eager fallback would give exact zeros everywhere.
    computed = [r for r in cmp.rows if r.type not in ("Embedding", "Dropout", "ReLU")]
    assert sum(r.max_abs > 0 for r in computed) > len(computed) // 2


@pytest.mark.slow
def test_recompile_limit_hit_during_a_comparison_is_a_warning() -> None:
    def shifted_sine(x: torch.Tensor) -> torch.Tensor:
        return x.sin() + 1

    model = _compiled(nn.Linear(4, 4))
    f = torch.compile(shifted_sine, dynamic=False)
    match = r"recompile limit \(raised to 8.*'shifted_sine'.*ran the calls past it eagerly"
    with pytest.warns(CompileFallbackWarning, match=match), compiled_run(model):
        for n in range(1, 11):  # 10 static shapes: 2 past the limit of 8
            f(torch.ones(n))
