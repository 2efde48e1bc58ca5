"""Functions registered as hooks (#15): torch calls a backward hook with the hooked module,
so ``module.forward(...)`` there skips that module's hooks; in a forward hook the same call
is the only way not to run the hook again, so it gets no finding, not even a guess; a
function that is also called directly (with anything) is not resolved this way."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")
ALL = (*CONFIDENT, "HS104")

_HOOKS = """\
import torch


def backward_hook(module, grad_in, grad_out):
    return module.forward(grad_out[0])  # HS101


def forward_hook(module, inputs, output):
    return module.forward(inputs[0])


class Probe:
    def hook(self, layer, grad_in, grad_out):
        self.out = layer.forward(grad_out[0])  # HS101

    def attach(self, model):
        for m in model.modules():
            m.register_full_backward_hook(self.hook)


def attach(model):
    model.register_full_backward_hook(backward_hook)
    model.register_forward_hook(forward_hook)
"""

_CALLED_TOO = """\
import torch


class Step:
    def forward(self, x):
        return x


def backward_hook(module, grad_in, grad_out):
    return module.forward(grad_out[0])


def attach(model):
    model.register_full_backward_hook(backward_hook)
    return backward_hook(Step(), None, (1,))
"""


def test_hooks_are_called_with_the_module(tmp_path: Path) -> None:
    path = write_source(tmp_path, "hooks.py", _HOOKS)
    assert found(tmp_path, path, ALL) == expected_codes(path)
    assert len(expected_codes(path)) == 2


def test_a_hook_also_called_directly(tmp_path: Path) -> None:
    path = write_source(tmp_path, "called.py", _CALLED_TOO)
    assert found(tmp_path, path, CONFIDENT) == set()
