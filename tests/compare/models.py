"""Small real models for the compare tests (also usable as MODEL_SPECs: tests/compare/models.py:fn)."""

from __future__ import annotations

import copy

import torch
from torch import nn

from hookscope.zoo import ResNetLike


def resnet_tiny() -> nn.Module:
    """ResNet-shaped CNN: one bottleneck per stage, 10 classes, eval mode (seeded)."""
    torch.manual_seed(0)
    return ResNetLike((1, 1, 1, 1), num_classes=10).eval()


def gpt2_tiny() -> nn.Module:
    """GPT-2 from a small config (2 layers, 64 wide), eager attention, eval mode (seeded)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=128,
        n_positions=64,
        n_embd=64,
        n_layer=2,
        n_head=4,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
    )
    config._attn_implementation = "eager"
    return GPT2LMHeadModel(config).eval()


def gpt2_ids(tokens: int = 32) -> torch.Tensor:
    """Deterministic token ids for `gpt2_tiny`."""
    return torch.arange(tokens).remainder(128).unsqueeze(0)


class DropoutNet(nn.Module):
    """BatchNorm and dropout in training mode, a module called twice."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.bn = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.5)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.drop(self.bn(self.fc1(x))))
        return self.fc2(self.act(h))


def perturbed(model: nn.Module, param: str, scale: float = 0.05) -> nn.Module:
    """A copy of ``model`` with one parameter slightly perturbed (the planted fault)."""
    twin = copy.deepcopy(model)
    weight = twin.get_parameter(param)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        weight.add_(scale * weight.abs().mean() * torch.randn(weight.shape, generator=generator))
    return twin
