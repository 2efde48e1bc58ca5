"""A base class's property in another file (#15): ``self.model`` in a subclass, where the
base (``pkg/base.py``) has ``@property def model(self): return self._model`` and
``self._model`` comes from the constructor: what every construction passes. Plain
objects passed there give no finding."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_BASE = """\
class Holder:
    def __init__(self, model):
        self._model = model

    @property
    def model(self):
        return self._model
"""

_SUBCLASS = """\
import torch
from torch import nn

from pkg.base import Holder


class {cls}:
    def forward(self, x):
        return x


class TorchHolder(Holder):
    def predict(self, x):
        return self.model.forward(x){mark}


def build():
    return TorchHolder({cls_name}())
"""


def _project(tmp_path: Path, module: bool) -> Path:
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(tmp_path, "pkg/base.py", _BASE)
    source = _SUBCLASS.format(
        cls="Net(nn.Module)" if module else "Step",
        cls_name="Net" if module else "Step",
        mark="  # HS101" if module else "",
    )
    return write_source(tmp_path, "pkg/holders.py", source)


def test_a_base_property_in_another_file(tmp_path: Path) -> None:
    path = _project(tmp_path, module=True)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(14, "HS101")}


def test_a_base_property_holding_a_plain_object(tmp_path: Path) -> None:
    path = _project(tmp_path, module=False)
    assert found(tmp_path, path, CONFIDENT) == set()
