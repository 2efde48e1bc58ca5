"""HuggingFace models from small configs (no weights), and a 7B LLaMA on meta."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import hookscope

transformers = pytest.importorskip("transformers")

B, L, E, V = 2, 16, 32, 100  # batch, tokens, hidden size, vocabulary


def _ids() -> torch.Tensor:
    return torch.ones(B, L, dtype=torch.long)


@pytest.mark.parametrize("device", [None, "cpu"])
def test_gpt2_tied_head(device: str | None) -> None:
    config = transformers.GPT2Config(
        n_layer=2, n_embd=E, n_head=4, vocab_size=V, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPT2LMHeadModel(config)
    s = hookscope.summary(model, input_ids=_ids(), device=device)
    # per layer: c_attn E->3E, QK^T and AV (L x L x E each), c_proj E->E, MLP E->4E->E
    layer = B * L * E * 3 * E + 2 * B * L * L * E + B * L * E * E + 2 * B * L * E * 4 * E
    assert s.macs == 2 * layer + B * L * E * V  # + LM head
    # wte 100x32 (tied with lm_head: once), wpe 64x32, per layer
    # ln 2x64, c_attn 32*96+96, c_proj 32*32+32, c_fc 32*128+128, proj 128*32+32; ln_f 64
    per_layer = 64 + 3168 + 1056 + 64 + 4224 + 4128
    assert s.total_params == 3200 + 2048 + 2 * per_layer + 64 == 30720
    assert s.device == ("meta" if device is None else "cpu")
    assert s.output_shapes[0] == (B, L, V)


def test_bert_encoder() -> None:
    config = transformers.BertConfig(
        num_hidden_layers=2,
        hidden_size=E,
        num_attention_heads=4,
        intermediate_size=64,
        vocab_size=V,
        max_position_embeddings=64,
    )
    s = hookscope.summary(
        transformers.BertModel(config), input_ids=_ids(), attention_mask=torch.ones(B, L)
    )
    # per layer: q, k, v, o (E->E), attention 2 x L x L x E, FFN E->64->E; pooler E->E on [CLS]
    layer = 4 * B * L * E * E + 2 * B * L * L * E + 2 * B * L * E * 64
    assert s.macs == 2 * layer + B * E * E
    assert s.total_params == 23520  # embeddings 5376 + 2 x 8544 + pooler 1056


@pytest.mark.parametrize("device", [None, "cpu"])
def test_llama_grouped_query_attention(device: str | None) -> None:
    config = transformers.LlamaConfig(
        num_hidden_layers=2,
        hidden_size=E,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=V,
        max_position_embeddings=64,
    )
    s = hookscope.summary(transformers.LlamaForCausalLM(config), input_ids=_ids(), device=device)
    kv = E // 2  # 2 of 4 heads of size 8
    layer = 2 * B * L * E * E + 2 * B * L * E * kv + 2 * B * L * L * E + 3 * B * L * E * 64
    assert s.macs == 2 * layer + B * L * E * V
    # embed 3200, per layer q 1024 k 512 v 512 o 1024 MLP 3x2048 norms 64, norm 32, head 3200
    assert s.total_params == 3200 + 2 * 9280 + 32 + 3200


_SEVEN_B = textwrap.dedent(
    """
    import json, resource, sys
    import torch, transformers, hookscope

    def peak_mib():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    config = transformers.LlamaConfig(
        hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
    )
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    before = peak_mib()
    s = hookscope.summary(model, input_ids=torch.ones(1, 128, dtype=torch.long))
    print(json.dumps({"before": before, "after": peak_mib(), "params": s.total_params,
                      "macs": s.macs, "device": s.device, "param_bytes": s.param_bytes}))
    """
)


@pytest.mark.slow
def test_llama_7b_on_meta_uses_little_memory() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SEVEN_B], capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["device"] == "meta"
    assert result["params"] == 6_738_415_616  # LLaMA-7B
    assert result["param_bytes"] == 4 * 6_738_415_616  # fp32: ~25 GiB it never allocates
    # per layer: q, k, v, o 4 x T x E x E, attention 2 x T x T x E, MLP 3 x T x E x 11008
    t, e = 128, 4096
    layer = 4 * t * e * e + 2 * t * t * e + 3 * t * e * 11008
    assert result["macs"] == 32 * layer + t * e * 32000
    # memory, not time: the summary adds little to the process's peak RSS
    assert result["after"] - result["before"] < 512
    assert result["after"] < 2048
