"""Model factories for the command line: ``hookscope summary model.py:build ...``.

A model file for hookscope's CLI is any Python file with a function that returns
an ``nn.Module``; ``MODEL_SPEC`` names it as ``path/to/file.py:function``.

    hookscope summary examples/model.py:build --input-size 1,3,32,32
    hookscope summary examples/model.py:tiny_lm --input-ids 1,16 --input attention_mask=1,16
"""

from __future__ import annotations

import torch
from torch import nn


class TinyLM(nn.Module):
    """A two-layer causal language model shape: embedding, transformer blocks, head."""

    def __init__(self, vocab: int = 100, dim: int = 32, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        block = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64, batch_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        padding = attention_mask == 0
        return self.head(self.blocks(self.embed(input_ids), src_key_padding_mask=padding))


def build(num_classes: int = 10) -> nn.Module:
    """A small image classifier for 3x32x32 inputs (the same weights on every call)."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, num_classes),
    )


def build_v2(num_classes: int = 10) -> nn.Module:
    """`build` with other weights in its first convolution: a changed model to compare."""
    model = build(num_classes)
    torch.manual_seed(1)
    model[0].reset_parameters()
    return model


def tiny_lm() -> nn.Module:
    """`TinyLM` with its defaults."""
    return TinyLM()
