"""Summarise a LLaMA-7B-sized model built on the meta device: no weights, little memory.

Run: HF_HUB_OFFLINE=1 .venv/bin/python examples/summary_llama7b_meta.py
"""

from __future__ import annotations

import resource

import torch
import transformers

import hookscope


def main() -> None:
    config = transformers.LlamaConfig(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=32000,
    )
    with torch.device("meta"):  # parameters have shapes, no storage
        model = transformers.LlamaForCausalLM(config)
    s = hookscope.summary(model, input_ids=torch.ones(1, 128, dtype=torch.long), depth=2)
    print(s)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n{s.total_params / 1e9:.2f} B params, {s.macs / 1e9:.1f} GMACs for 128 tokens")
    print(f"process peak RSS: {peak:.0f} MiB (the fp32 weights alone would be 25 GiB)")


if __name__ == "__main__":
    main()
