"""Modules handed into a custom autograd ``Function`` (#15): ``Fn.apply(x, self.layer)``
runs ``Fn.forward(ctx, x, layer)``, and ``ctx.layer = layer`` there is what ``backward``
reads; plain objects handed in the same way, and a class's ``apply`` handed on as a value,
give no finding."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_FUNCTION = """\
import torch
from torch import autograd, nn


class ForwardBackward(autograd.Function):
    @staticmethod
    def forward(ctx, x, forward_module, backward_module):
        ctx.backward_module = backward_module
        return forward_module.forward(x){mark}

    @staticmethod
    def backward(ctx, grad):
        backward_module = ctx.backward_module
        return backward_module.forward(grad), None, None{mark}


class {layer}:
    def forward(self, x):
        return x


class Hybrid(nn.Module):
    def __init__(self):
        super().__init__()
        self.forward_module = {layer_call}
        self.backward_module = {layer_call}

    def forward(self, x):
        return ForwardBackward.apply(x, self.forward_module, self.backward_module)
"""


def _source(module: bool, handed_on: bool = False) -> str:
    source = _FUNCTION.format(
        mark="  # HS101" if module else "",
        layer="Layer(nn.Module)" if module else "Layer",
        layer_call="Layer()",
    )
    if handed_on:
        source += "\n\nrun = ForwardBackward.apply\n"
    return source


def test_modules_passed_to_apply(tmp_path: Path) -> None:
    path = write_source(tmp_path, "hybrid.py", _source(module=True))
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert expected_codes(path) == {(9, "HS101"), (14, "HS101")}


def test_plain_objects_passed_to_apply(tmp_path: Path) -> None:
    path = write_source(tmp_path, "hybrid.py", _source(module=False))
    assert found(tmp_path, path, CONFIDENT) == set()


def test_apply_handed_on_says_nothing(tmp_path: Path) -> None:
    # ``run = ForwardBackward.apply``: calls of ``run`` are out of sight, so the one
    # ``apply(...)`` call seen is not every call
    path = write_source(tmp_path, "hybrid.py", _source(module=True, handed_on=True))
    assert found(tmp_path, path, CONFIDENT) == set()
