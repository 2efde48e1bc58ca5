"""Model summary: table, exact totals, dispatch-level MACs, JSON.

Run: .venv/bin/python examples/summary_basics.py
"""

from __future__ import annotations

import json

import torch
import torch.nn.functional as F
from torch import nn

import hookscope
from hookscope.zoo import SmallCNN


class TinyAttention(nn.Module):
    """Attention written with F.* calls: module-hook counters see none of it."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)  # counted: 2 x n x n x d per batch
        return self.out(y.transpose(1, 2).reshape(b, n, d))


def main() -> None:
    # 1. The table (str) and the data (to_dict) for a small CNN, on the meta device.
    s = hookscope.summary(SmallCNN(), input_size=(1, 3, 32, 32))
    print(s)
    print(json.dumps(s.to_dict())[:120], "...")

    # 2. Attention through F.scaled_dot_product_attention counts; depth limits rows only.
    s = hookscope.summary(TinyAttention(), input_size=(2, 16, 32), depth=1)
    print(f"\nTinyAttention: {s.macs:,} MACs, by op: {s.macs_by_op}")

    # 3. Tied weights count once; frozen parameters are reported apart.
    lm = nn.Sequential(nn.Embedding(100, 16), nn.Linear(16, 100, bias=False))
    lm[1].weight = lm[0].weight
    lm[0].weight.requires_grad_(False)
    s = hookscope.summary(lm, torch.ones(1, 8, dtype=torch.long))
    print(f"\ntied LM: {s.total_params:,} params ({s.frozen_params:,} frozen), {s.macs:,} MACs")

    # 4. Markdown and CSV for reports.
    print("\n" + s.to_markdown().splitlines()[0])
    print(s.to_csv().splitlines()[0])


if __name__ == "__main__":
    main()
