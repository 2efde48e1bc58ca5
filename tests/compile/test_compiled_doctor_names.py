"""The doctor's graph-break check and clean names for compiled models."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hookscope
from hookscope.doctor import graph_breaks
from hookscope.stats import Plan, reduce_tensor
from hookscope.zoo import SmallCNN

# At a graph break dynamo 2.13 looks at .grad of non-leaf tensors and lets
# PyTorch's warning about it escape; the suite turns warnings into errors.
pytestmark = pytest.mark.filterwarnings(
    "ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning"
)


class _Breaks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        torch._dynamo.graph_break()  # the user's own break, not hookscope's
        return y.relu()


def test_graph_breaks_attributes_none_to_hookscope() -> None:
    model = _Breaks()
    x = torch.randn(2, 4)
    with hookscope.Monitor(model), hookscope.session(model) as s:
        s.add_forward_hook(lambda name, module, args, output: None, leaves_only=True)
        report = graph_breaks(model, x)
    assert report.graphs == 2
    assert len(report.breaks) == 1
    assert report.by_hookscope == ()
    assert "test_compiled_doctor_names.py:" in report.breaks[0].where


def test_graph_breaks_blames_hookscope_code_on_the_stack() -> None:
    # eager statistics (the C kernel through ctypes) cannot be traced
    model = nn.Linear(4, 4)
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda name, module, args, output: reduce_tensor(output, Plan()))
        report = graph_breaks(model, torch.randn(2, 4))
    assert report.by_hookscope
    assert "/hookscope/stats/" in report.by_hookscope[0].where


def test_summary_of_compiled_model_has_clean_names() -> None:
    model = SmallCNN()
    x = torch.randn(1, 3, 32, 32)
    eager = hookscope.summary(model, x)
    compiled = hookscope.summary(torch.compile(model), x)
    assert [r.name for r in compiled.rows] == [r.name for r in eager.rows]
    assert compiled.total_params == eager.total_params
    assert not any("_orig_mod" in r.name for r in compiled.rows)
