"""Classes picked by name from a project module (issue #33): ``getattr(models, arch)()``
and ``getattr(importlib.import_module("models"), arch)()`` build a module when every
class the module offers is one; a function or a plain class among them leaves it unknown."""

from __future__ import annotations

from pathlib import Path

from hookscope.lint import lint
from tests.lint.conftest import write_source

_MODELS = """\
import torch.nn as nn

from layers import Block


class Small(nn.Module):
    def forward(self, x):
        return x


class Large(Small):
    pass


def _helper():
    return 1
"""

_LAYERS = """\
import torch.nn as nn


class Block(nn.Module):
    pass
"""

_MAIN = """\
import importlib

import models


def build(name, x):
    net = getattr(models, name)()
    net.forward(x)
    loaded = importlib.import_module("models")
    other = getattr(loaded, name)(3)
    return other.forward(x)
"""


def _found(root: Path, select: tuple[str, ...] = ("HS1",)) -> list[tuple[int, str, str]]:
    return [
        (f.line, f.code, f.resolution)
        for f in lint(root, config=False, select=list(select))
        if f.path.endswith("main.py")
    ]


def test_every_class_of_the_module_is_a_module(tmp_path: Path) -> None:
    write_source(tmp_path, "models.py", _MODELS)
    write_source(tmp_path, "layers.py", _LAYERS)
    write_source(tmp_path, "main.py", _MAIN)
    via = "getattr({}, ...) picks one of the classes of models (Block, Small, Large), each a module"
    assert _found(tmp_path) == [
        (8, "HS101", via.format("models")),
        (11, "HS101", via.format("loaded")),
    ]


def test_a_public_function_or_plain_class_among_them_leaves_it_unknown(tmp_path: Path) -> None:
    write_source(tmp_path, "layers.py", _LAYERS)
    write_source(tmp_path, "main.py", _MAIN)
    for extra in ("\n\ndef build():\n    return 1\n", "\n\nclass Config:\n    pass\n"):
        write_source(tmp_path, "models.py", _MODELS + extra)
        assert _found(tmp_path) == []
        # (only `net` reads like a module: an HS104 guess by its name, `other` none)
        assert [(line, code) for line, code, _ in _found(tmp_path, ("HS1", "HS104"))] == [
            (8, "HS104")
        ]
