"""How a compiled Monitor writes its rows: one extern op per row on the CPU, tensor ops elsewhere."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch._dynamo as dynamo
from torch import nn

import hookscope
from hookscope.monitor.traced import TracedCollector
from hookscope.stats import ACTIVATION_STATS, plan_for
from hookscope.stats.traced import reduce_row


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))


def _x() -> torch.Tensor:
    return torch.randn(6, 8, generator=torch.Generator().manual_seed(1))


def _ops(graphs: list[torch.fx.GraphModule]) -> list[object]:
    return [n.target for g in graphs for n in g.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("extern", [None, False], ids=["cpu-default", "tensor-ops"])
def test_one_graph_and_one_op_per_row_on_the_cpu(extern: bool | None) -> None:
    model = _mlp()
    plain = dynamo.explain(model)(_x())
    dynamo.reset()
    with hookscope.Monitor(model) as mon:
        assert mon._compiled is not None
        mon._compiled.traced.extern = extern
        monitored = dynamo.explain(model)(_x())
    assert (monitored.graph_count, monitored.graph_break_count) == (plain.graph_count, 0)
    ops = _ops(monitored.graphs)
    merges = ops.count(torch.ops.hookscope.merge_row_.default)
    assert merges == (4 if extern is None else 0)  # the four layers' outputs
    assert (torch.aminmax in ops) == (extern is False)


@pytest.mark.slow
def test_tensor_op_rows_equal_eager() -> None:
    """The formulation used off the CPU (where a GPU would fuse it), checked here on the CPU."""

    def run(compiled: bool) -> dict[tuple[str, str, str], float]:
        model = _mlp()
        with hookscope.Monitor(model) as mon:
            assert mon._compiled is not None
            mon._compiled.traced.extern = False
            call = torch.compile(model) if compiled else model
            for _ in range(2):
                call(_x()).square().mean().backward()
                result = mon.step()
        assert result is not None and result.missing == ()
        return {(r.phase, r.module, r.stat): r.value for r in result.records}

    eager = run(compiled=False)
    dynamo.reset()
    compiled = run(compiled=True)
    assert compiled.keys() == eager.keys()
    assert {key[0] for key in compiled} == {"forward", "backward", "param"}
    for key, value in eager.items():
        assert math.isclose(compiled[key], value, rel_tol=1e-4, abs_tol=1e-6), key


@pytest.mark.slow
def test_nan_made_inside_the_graph_is_counted_exactly() -> None:
    """A NaN in an output sends the extern op to its exact tensor-op counts."""
    model = _mlp()
    with torch.no_grad():
        model[0].bias[3] = float("nan")  # every row of the first output gets one NaN
    eager_model = copy.deepcopy(model)

    def counts(m: nn.Module, compiled: bool) -> dict[str, float]:
        with hookscope.Monitor(m, grads=False) as mon:
            (torch.compile(m) if compiled else m)(_x())
            result = mon.step()
        assert result is not None
        return {r.module: r.value for r in result.records if r.stat == "nan_count"}

    want = counts(eager_model, compiled=False)
    got = counts(model, compiled=True)
    assert want["0"] == 6
    assert got == want


def test_relu_row_is_taken_from_its_input_when_the_hook_has_it() -> None:
    """Given the module and its args, a ReLU's row reads the ReLU's input (not its output)."""
    relu = nn.ReLU()
    plan = plan_for(ACTIVATION_STATS)
    traced = TracedCollector(
        ["relu"], {"relu": plan}, outputs=True, grads=False, device=torch.device("cpu")
    )
    x = torch.randn(4, 8, 3, generator=torch.Generator().manual_seed(2))

    def f(x: torch.Tensor) -> torch.Tensor:
        y = relu(x)
        traced.on_forward("relu", y, relu, (x,))
        return y.amax(dim=2)  # the ReLU output itself need never be stored

    explained = dynamo.explain(f)(x)
    (merge,) = [
        n
        for g in explained.graphs
        for n in g.graph.nodes
        if n.target is torch.ops.hookscope.merge_row_.default
    ]
    source = merge.args[2]  # x.detach(), and the op takes relu of it
    assert (source.args[0].name, merge.args[-1]) == ("l_x_", True)
    traced.take()
    dynamo.reset()
    torch.compile(f, fullgraph=True)(x)
    want = reduce_row(torch.relu(x), plan, torch.float64)
    torch.testing.assert_close(traced.buffer[0], want)
