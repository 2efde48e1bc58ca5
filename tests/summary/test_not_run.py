"""The summary's "never ran" list agrees with the doctor; ModuleList rows keep their parent."""

from __future__ import annotations

import torch
from torch import nn

import hookscope
from hookscope.summary.format import row_labels
from hookscope.zoo import SmallCNN


class Stack(nn.Module):
    """A transformer-like body: blocks in a ModuleList, one block left unused."""

    def __init__(self) -> None:
        super().__init__()
        self.h = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.spare = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.h:
            x = block(x)
        return x


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.transformer = Stack()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.transformer(x)


def test_a_direct_forward_call_is_not_never_ran() -> None:
    model = SmallCNN(plant_bypass=True)
    summary = hookscope.summary(model, input_size=(1, 3, 32, 32))
    doctor = hookscope.doctor(model, torch.randn(1, 3, 32, 32))
    assert summary.not_run == ()
    assert summary.called_directly == ("head",) == tuple(b.module for b in doctor.bypasses)
    assert "Modules run through a direct .forward() call" in str(summary)
    assert "never ran" not in str(summary)


def test_containers_are_not_listed_and_rows_keep_their_parent() -> None:
    summary = hookscope.summary(Model(), input_size=(2, 4))
    assert summary.not_run == ("transformer.spare",)
    labels = row_labels(summary.rows)
    assert labels == ["(root)", "transformer", "h.0", "h.1", "h.2"]
    assert "    h.0  " in str(summary)
