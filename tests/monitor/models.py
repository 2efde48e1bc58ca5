"""Small models for the monitor tests: NaN injected at known places."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class NaNOut(nn.Module):
    """Identity, except element 0 of the output becomes NaN when ``armed``."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.armed:
            return x * 1.0
        mask = torch.zeros_like(x)
        mask.view(-1)[0] = float("nan")
        return x + mask


class _NaNGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        out = grad.clone()
        out.view(-1)[0] = float("nan")
        return out


class NaNGrad(nn.Module):
    """Identity in the forward; its backward turns one gradient element into NaN."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _NaNGrad.apply(x)


def chain(middle: nn.Module) -> nn.Sequential:
    """Linear, Tanh, ``middle``, Linear, ReLU, Linear (8 -> 4), ``middle`` at index 2."""
    return nn.Sequential(
        nn.Linear(8, 16), nn.Tanh(), middle, nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)
    )


class InplaceBlock(nn.Module):
    """Conv, BN, in-place ReLU and a residual add: the pattern full backward hooks break on."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(4 * 6 * 6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn(self.conv(x)))
        out = self.relu(out + x)
        return self.head(out.flatten(1))


def train_step(model: nn.Module, x: torch.Tensor, opt: torch.optim.Optimizer) -> None:
    """One SGD step on the sum of squares of the output."""
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
