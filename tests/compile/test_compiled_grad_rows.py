"""A compiled Monitor's gradient rows: one extern op each, added into a buffer outside the graph."""

from __future__ import annotations

import copy
import math

import torch
import torch._dynamo as dynamo
from torch import nn

import hookscope
from hookscope.stats import gradrow


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))


def _x(seed: int) -> torch.Tensor:
    return torch.randn(6, 8, generator=torch.Generator().manual_seed(seed))


def _records(model: nn.Module, compiled: bool, backwards: int) -> dict[tuple[str, str, str], float]:
    """The first step's records, after ``backwards`` forward-backward passes (accumulation)."""
    with hookscope.Monitor(model) as mon:
        call = torch.compile(model, fullgraph=True) if compiled else model
        for i in range(backwards):
            call(_x(i)).square().mean().backward()
        result = mon.step()
        assert result is not None and result.missing == ()
        if compiled:
            assert mon._compiled is not None
            traced = mon._compiled.traced
            assert traced.row_probed and not traced.grad_rows.any()  # emptied by take
            key = traced._grad_key
    if compiled:
        assert key not in gradrow._BUFFERS  # closed: a graph that outlives it writes nothing
    return {(r.phase, r.module, r.stat): r.value for r in result.records}


def test_accumulated_gradient_rows_equal_eager() -> None:
    """Two backwards before one step: rows add up as the eager hooks' reductions merge."""
    model = _mlp()
    eager = _records(copy.deepcopy(model), compiled=False, backwards=2)
    dynamo.reset()
    compiled = _records(model, compiled=True, backwards=2)
    assert compiled.keys() == eager.keys()
    assert {key for key in eager if key[0] == "backward"}
    for key, value in eager.items():
        assert math.isclose(compiled[key], value, rel_tol=1e-4, abs_tol=1e-6), key


def test_one_gradient_op_per_probe_in_the_backward() -> None:
    model = _mlp()
    graphs: list[torch.fx.GraphModule] = []

    def backend(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> object:
        from functorch.compile import make_boxed_func
        from torch._functorch.aot_autograd import aot_module_simplified

        def keep(g: torch.fx.GraphModule, _inputs: list[torch.Tensor]) -> object:
            graphs.append(g)
            return make_boxed_func(g.forward)

        return aot_module_simplified(gm, inputs, fw_compiler=keep, bw_compiler=keep)

    dynamo.reset()
    with hookscope.Monitor(model, outputs=False, params=False) as mon:
        torch.compile(model, backend=backend)(_x(0)).sum().backward()
        result = mon.step()
    assert result is not None
    ops = [n.target for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    assert ops.count(torch.ops.hookscope.grad_row_add.default) == 4  # one per module output
    assert torch.ops.hookscope.grad_rows.default not in ops
    assert {r.module for r in result.records if r.phase == "backward"} == {"0", "1", "2", "3"}
