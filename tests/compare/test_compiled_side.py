"""Comparing against a ``torch.compile``d model, forward only: one whole-model graph, not one per module.

The recorder's hooks are traced into the graph (no graph break), so the cost
is about one compile of the model; ``backward=True`` keeps the per-module
graphs (the hooks must run eagerly there).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch._dynamo as dynamo
from torch import nn
from torch._dynamo.utils import counters

import hookscope


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU(inplace=True)  # in place after the hook: the copy must not change
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)) * 2)


def _x() -> torch.Tensor:
    return torch.randn(5, 8, generator=torch.Generator().manual_seed(0))


def test_compiled_side_is_one_graph_without_breaks() -> None:
    dynamo.reset()
    counters.clear()
    model = _Net().eval()
    cmp = hookscope.compare(model, lambda m: torch.compile(m), _x())
    # the model's graph; torch.compile runs the root module's own hooks outside it,
    # where dynamo compiles each hook's frame (a clone of the output) on its own
    assert counters["stats"]["unique_graphs"] <= 3
    assert sum(counters["graph_break"].values()) == 0
    assert [r.name for r in cmp.rows] == ["fc1", "act", "fc2", ""]
    assert cmp.culprit is None and all(r.cosine > 0.99999 for r in cmp.rows)
    with torch.no_grad():
        hidden = model.fc1(_x())
    assert cmp.row("fc1").max_abs < 1e-6
    assert hidden.min() < 0  # so the in-place ReLU changed fc1's output after its hook
    dynamo.reset()


def test_two_comparisons_in_one_process_each_record_their_own_run() -> None:
    dynamo.reset()
    model = _Net().eval()
    first = hookscope.compare(model, lambda m: torch.compile(m), _x())
    with torch.no_grad():
        model.fc2.weight.mul_(2)  # a different model B would show it
    second = hookscope.compare(model, lambda m: torch.compile(m), _x() * 3)
    assert [r.name for r in first.rows] == [r.name for r in second.rows]
    assert all(r.max_abs < 1e-4 for r in second.rows)  # B recorded this run, not the first's
    dynamo.reset()


# dynamo reads a non-leaf .grad while tracing the session's hook wrapper (torch 2.13),
# and the UserWarning it raises would be an error under pytest's warning filter
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_backward_keeps_the_per_module_graphs() -> None:
    dynamo.reset()
    model = _Net()
    cmp = hookscope.compare(model, lambda m: torch.compile(m), _x(), backward=True)
    assert cmp.culprit is None
    assert "graph split at every module" in cmp.label_b
    dynamo.reset()


@pytest.mark.slow
def test_torch_own_script_method_deprecations_are_not_shown(tmp_path: Path) -> None:
    """Inductor's first import (torch.utils.mkldnn) warns 14 times; compare keeps them out."""
    script = tmp_path / "run.py"
    script.write_text(
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "import torch, hookscope\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n"
        "hookscope.compare(model, lambda m: torch.compile(m), torch.randn(2, 4))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "script_method" not in done.stderr
