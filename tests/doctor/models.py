"""Small real models, each with one way a hook silently does not fire."""

from __future__ import annotations

import torch
from torch import nn


class NoGradConv(nn.Module):
    """The classic case inside a model: ``self.conv.forward(x)`` under ``no_grad``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.conv.forward(x)  # noqa: HS101 -- on purpose


class PrunedParent(nn.Module):
    """A pruned ``fc`` called through ``.forward()`` inside its parent."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc.forward(x).relu()  # noqa: HS101 -- on purpose


class Branchy(nn.Module):
    """``aux`` is never used; ``rare`` runs only when ``use_rare`` is set."""

    def __init__(self, use_rare: bool = False) -> None:
        super().__init__()
        self.main = nn.Linear(4, 4)
        self.rare = nn.Linear(4, 4)
        self.aux = nn.Linear(4, 4)
        self.use_rare = use_rare

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.main(x)
        return self.rare(x) if self.use_rare else x


class GradTraps(nn.Module):
    """``frozen`` sees no grad; ``nograd`` runs under no_grad; ``side``'s output is dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.frozen = nn.Linear(4, 4)
        self.frozen.requires_grad_(False)
        self.nograd = nn.Linear(4, 4)
        self.side = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.frozen(x)
        with torch.no_grad():
            skip = self.nograd(x)
        self.side(x)  # result unused
        return self.head(x + skip)


class WithScripted(nn.Module):
    """A body that can be replaced by its TorchScript version."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))
