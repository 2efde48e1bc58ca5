"""fp32 vs bf16 autocast on GPT-2 tiny, and eager vs torch.compile."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hookscope
from tests.compare.models import gpt2_ids, gpt2_tiny


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


@pytest.mark.slow
def test_eager_vs_torch_compile_agrees_within_tolerance() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 8))
    model.eval()
    cmp = hookscope.compare(model, lambda m: torch.compile(m), torch.randn(4, 16))
    assert cmp.culprit is None
    assert [r.name for r in cmp.rows] == ["0", "1", "2", "3", ""]  # no "_orig_mod." prefix
    assert not cmp.unmatched_a and not cmp.unmatched_b
    assert all(r.cosine > 0.999999 for r in cmp.rows)
