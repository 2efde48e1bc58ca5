"""Project classes named like ``torch.nn`` classes (#15): ``class Container:`` with no
bases is a plain class where its bare name is used (``class Holder(Container)``), also
when the masked parse of the file leaves its definition out; ``nn.Module`` stays torch's
in a file that defines a plain ``Module`` of its own."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_PLAIN_CONTAINER = """\
import torch


class Step:
    def forward(self, x):
        return x


class Container:
    def __init__(self, model):
        self._model = model

    def describe(self):
        return "container"


class Holder(Container):
    def predict(self, x):
        return self._model.forward(x)


def build():
    return Holder(Step())
"""

_OWN_MODULE = """\
import torch
from torch import nn


class Module:
    def helper(self):
        return 1


class Net(nn.Module):
    def forward(self, x):
        return x

    def other(self, x):
        return self.forward(x)  # HS102
"""


def test_a_plain_class_named_like_a_torch_class(tmp_path: Path) -> None:
    path = write_source(tmp_path, "holder.py", _PLAIN_CONTAINER)
    assert found(tmp_path, path, CONFIDENT) == set()


def test_torch_names_stay_torch_where_spelled_through_torch(tmp_path: Path) -> None:
    path = write_source(tmp_path, "own_module.py", _OWN_MODULE)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(15, "HS102")}
