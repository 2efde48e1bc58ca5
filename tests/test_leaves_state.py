"""The doctor and compare leave ``.grad`` and every random generator as they were."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn

import hookscope


def _model() -> tuple[nn.Module, torch.Tensor]:
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 4)
    model(x).sum().backward()
    return model, x


def _grads(model: nn.Module) -> list[tuple[int, torch.Tensor]]:
    return [(id(p.grad), p.grad.clone()) for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: hookscope.doctor(m, x, backward=True),
        lambda m, x: hookscope.compare(m, torch.float64, x, backward=True),
        lambda m, x: hookscope.record(m, x, backward=True),
    ],
    ids=["doctor", "compare", "record"],
)
def test_existing_grads_unchanged(call: object) -> None:
    model, x = _model()
    before = _grads(model)
    call(model, x)  # type: ignore[operator]
    after = _grads(model)
    assert [i for i, _ in after] == [i for i, _ in before]  # the same tensors
    for (_, g0), (_, g1) in zip(before, after, strict=True):
        assert torch.equal(g0, g1)  # and not doubled


def test_doctor_backward_gives_no_grad_where_there_was_none() -> None:
    model = nn.Linear(3, 2)
    hookscope.doctor(model, torch.randn(2, 3), backward=True)
    assert all(p.grad is None for p in model.parameters())


def test_doctor_leaves_every_generator() -> None:
    model, x = _model()
    model.train()  # dropout draws
    torch_state, py_state, np_state = torch.random.get_rng_state(), random.getstate(), None
    np_state = np.random.get_state()
    hookscope.doctor(model, x, backward=True)
    assert torch.equal(torch.random.get_rng_state(), torch_state)
    assert random.getstate() == py_state
    after = np.random.get_state()
    assert np_state[0] == after[0] and (np_state[1] == after[1]).all()
