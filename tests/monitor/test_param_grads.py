"""Parameter gradients read at the end of the backward report what each hook saw."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import hookscope
from hookscope.monitor.collector import Collector
from hookscope.zoo import SmallCNN


def _norms(result: hookscope.StepResult) -> dict[str, float]:
    return {r.module: r.value for r in result.records if r.phase == "param" and r.stat == "norm"}


def _model() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return SmallCNN(), torch.randn(4, 3, 32, 32)


def _collector(mon: hookscope.Monitor) -> Collector:
    assert mon._collector is not None
    return mon._collector


def test_gradients_accumulated_over_two_backwards_report_the_sum() -> None:
    model, x = _model()
    with hookscope.Monitor(model) as mon:
        model(x).square().mean().backward()
        assert _collector(mon).entries and not _collector(mon).param_grads.pending
        model(x[:2]).sum().backward()
        result = mon.step()
    assert result is not None
    for name, param in model.named_parameters():
        assert param.grad is not None
        want = float(torch.linalg.vector_norm(param.grad.double()))
        assert _norms(result)[name] == pytest.approx(want, rel=1e-6)


def test_the_same_norms_as_one_hook_at_a_time() -> None:
    model, x = _model()
    got = []
    for deferred in (True, False):
        with hookscope.Monitor(model) as mon:
            _collector(mon).param_grads.enabled = deferred
            model(x).square().mean().backward()
            model.zero_grad()
            result = mon.step()
        assert result is not None
        got.append(_norms(result))
    assert got[0] == got[1]
    assert len(got[0]) == len(list(model.parameters()))


def test_an_optimizer_step_in_the_backward_leaves_the_gradients_reported() -> None:
    """Another post-accumulate-grad hook may clear ``.grad``: the Monitor's hook reads it first."""
    model, x = _model()
    seen: dict[str, float] = {}
    names = {id(p): n for n, p in model.named_parameters()}

    def step_and_clear(param: torch.Tensor) -> None:
        assert param.grad is not None
        seen[names[id(param)]] = float(torch.linalg.vector_norm(param.grad.double()))
        param.grad = None

    with hookscope.Monitor(model) as mon:
        handles = [p.register_post_accumulate_grad_hook(step_and_clear) for p in model.parameters()]
        model(x).square().mean().backward()
        result = mon.step()
        for handle in handles:
            handle.remove()
    assert result is not None
    assert all(p.grad is None for p in model.parameters())
    norms = _norms(result)
    assert norms.keys() == seen.keys()
    for name, value in seen.items():
        assert math.isclose(norms[name], value, rel_tol=1e-6)


def test_a_gradient_changed_after_its_hook_is_read_as_it_ends() -> None:
    model, x = _model()
    head = model.head.weight
    with hookscope.Monitor(model) as mon:
        loss = model(x).square().mean()

        def double_head_grad(_grad: torch.Tensor) -> None:
            assert head.grad is not None  # the head's AccumulateGrad ran before this hook
            head.grad.mul_(2.0)

        model.features[0].weight.register_hook(double_head_grad)
        loss.backward()
        result = mon.step()
    assert result is not None and head.grad is not None
    want = float(torch.linalg.vector_norm(head.grad.double()))
    assert _norms(result)["head.weight"] == pytest.approx(want, rel=1e-6)
