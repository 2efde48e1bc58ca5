"""How a compiled Monitor writes its rows: one extern op per row on the CPU, tensor ops elsewhere."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
import torch
import torch._dynamo as dynamo
from torch import nn

import hookscope
from hookscope.monitor.traced import TracedCollector
from hookscope.stats import ACTIVATION_STATS, plan_for
from hookscope.stats.traced import reduce_row
from hookscope.zoo import Bottleneck


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
    affine = ops.count(torch.ops.hookscope.affine_row_.default)
    moves = ops.count(torch.ops.hookscope.move_row_.default)
    # the Linear outputs; the BatchNorm's and its ReLU's from the BatchNorm's input
    assert (merges, affine, moves) == ((2, 1, 1) if extern is None else (0, 0, 0))
    assert (torch.aminmax in ops) == (extern is False)


@pytest.mark.slow
def test_tensor_op_rows_equal_eager() -> None:
    """The formulation used off the CPU (where a GPU would fuse it), checked here on the CPU."""

    eager = _compiled_equals_eager(_mlp(), _x(), fullgraph=False, extern=False)
    assert {key[0] for key in eager} == {"forward", "backward", "param"}


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


def _compiled_equals_eager(
    model: nn.Module,
    x: torch.Tensor,
    *,
    complete: bool = True,
    fullgraph: bool = True,
    extern: bool | None = None,
    **options: Any,
) -> dict[tuple[str, str, str], float]:
    """Records of the second step of a Monitor (``options``; ``extern`` set on its traced
    collector when given), eager on a copy and compiled: the same keys, values within
    rtol 1e-4. Returns the eager ones."""

    def run(m: nn.Module, compiled: bool) -> dict[tuple[str, str, str], float]:
        with hookscope.Monitor(m, **options) as mon:
            if extern is not None:
                assert mon._compiled is not None
                mon._compiled.traced.extern = extern
            call = torch.compile(m, fullgraph=fullgraph) if compiled else m
            for _ in range(2):
                call(x).square().mean().backward()
                result = mon.step()
        assert result is not None and (result.missing == () or not complete)
        return {(r.phase, r.module, r.stat): r.value for r in result.records}

    eager = run(copy.deepcopy(model), compiled=False)
    dynamo.reset()
    compiled = run(model, compiled=True)
    assert compiled.keys() == eager.keys()
    for key, value in eager.items():
        assert math.isclose(compiled[key], value, rel_tol=1e-4, abs_tol=1e-6), key
    return eager


def _norm_net(norm: nn.Module, inplace: bool) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 6, 3), norm, nn.ReLU(inplace=inplace), nn.Conv2d(6, 4, 1), nn.ReLU()
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("norm", "train", "inplace"),
    [
        (nn.BatchNorm2d(6), True, True),
        (nn.BatchNorm2d(6, affine=False), True, False),
        (nn.BatchNorm2d(6), False, False),
        (nn.BatchNorm2d(6, track_running_stats=False), False, True),
    ],
    ids=["train-inplace-relu", "train-no-affine", "eval-running-stats", "eval-batch-stats"],
)
def test_batchnorm_rows_from_its_input_equal_eager(
    norm: nn.BatchNorm2d, train: bool, inplace: bool
) -> None:
    """A BatchNorm's row and its ReLU's are made from the BatchNorm's input: same values."""
    model = _norm_net(norm, inplace)
    with torch.no_grad():
        norm.running_mean.uniform_(-1, 1) if norm.running_mean is not None else None
        if norm.weight is not None:
            norm.weight.uniform_(-2, 2)  # negative scales swap min and max
            norm.bias.uniform_(-1, 1)
    model.train(train)
    x = torch.randn(5, 3, 9, 9, generator=torch.Generator().manual_seed(3))

    eager = _compiled_equals_eager(model, x)
    assert {("forward", "1", "mean"), ("forward", "2", "max")} <= eager.keys()


def test_batchnorm_output_is_not_read_by_the_rows() -> None:
    """The rows of a BatchNorm and of the ReLU after it read the BatchNorm's input only."""
    model = _norm_net(nn.BatchNorm2d(6), inplace=False)
    x = torch.randn(5, 3, 9, 9, generator=torch.Generator().manual_seed(3))
    with hookscope.Monitor(model, grads=False):
        (graph,) = dynamo.explain(model)(x).graphs
    nodes = list(graph.graph.nodes)
    conv = next(n for n in nodes if "conv2d" in str(n.target))
    (affine,) = [n for n in nodes if n.target is torch.ops.hookscope.affine_row_.default]
    assert affine.args[2].args[0] is conv  # x.detach() of the convolution's output
    (move,) = [n for n in nodes if n.target is torch.ops.hookscope.move_row_.default]
    assert (move.args[1:], affine.args[1]) == ((affine.args[-1], 16), 8)  # spare row → ReLU's
    merged = [n.args[2] for n in nodes if n.target is torch.ops.hookscope.merge_row_.default]
    assert len(merged) == 3  # the two convolutions and the last ReLU (from its input)


@pytest.mark.slow
def test_bottleneck_with_a_shared_relu_equals_eager() -> None:
    """A custom forward: one in-place ReLU after two BatchNorms, and after a residual sum."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), Bottleneck(16, 8, stride=2))
    x = torch.randn(4, 3, 12, 12, generator=torch.Generator().manual_seed(4))

    eager = _compiled_equals_eager(model, x)
    assert {("forward", "1.bn1", "mean"), ("forward", "1.relu", "max")} <= eager.keys()


@pytest.mark.slow
def test_a_user_hook_that_changes_the_batchnorm_output_is_seen() -> None:
    """With another hook on the BatchNorm, its rows and its ReLU's are read from the outputs."""
    model = _norm_net(nn.BatchNorm2d(6), inplace=False)
    model[1].register_forward_hook(lambda _m, _a, out: out * 2.0 + 1.0)
    x = torch.randn(5, 3, 9, 9, generator=torch.Generator().manual_seed(3))

    eager = _compiled_equals_eager(model, x, complete=False)
    assert eager[("forward", "1", "mean")] == pytest.approx(1.0, abs=1e-5)  # the hook's output


@pytest.mark.parametrize("outputs", [True, False], ids=["rows-and-grads", "grads-only"])
def test_forward_and_gradient_rows_fetched_together_equal_eager(outputs: bool) -> None:
    """`TracedCollector.take` reads both buffers in one transfer; each part lands in its phase."""

    eager = _compiled_equals_eager(_mlp(), _x(), fullgraph=False, outputs=outputs, params=False)
    phases = {"forward", "backward"} if outputs else {"backward"}
    assert {key[0] for key in eager} == phases
