"""Locals bound to one attribute chain (#15): ``kg, mdl = self.kg, self.mdl`` (or ``mdl =
self.mdl``) in a module whose base stores ``self.mdl = mdl`` from a constructor argument:
``mdl.forward(x)`` is what ``self.mdl.forward(x)`` would be, a submodule; in a plain class
(or bound to two different attributes) it is no confident finding."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_FRAMEWORK = """\
    import torch


    class Framework({base}):
        def __init__(self, kg, mdl, aux):
            {init}
            self.kg = kg
            self.mdl = mdl
            self.aux = aux


    class Method(Framework):
        def run(self, x):
            kg, mdl = self.kg, self.mdl
            return mdl.forward(x){mark}

        def score(self, x):
            mdl = self.mdl
            return mdl.forward(x){mark}

        def either(self, x, flag):
            if flag:
                mdl = self.mdl
            else:
                mdl = self.aux
            return mdl.forward(x)
    """


def test_locals_bound_to_a_submodule(tmp_path: Path) -> None:
    source = _FRAMEWORK.format(base="torch.nn.Module", init="super().__init__()", mark="  # HS101")
    path = write_source(tmp_path, "method.py", source)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 2


def test_locals_bound_to_an_attribute_of_a_plain_class(tmp_path: Path) -> None:
    path = write_source(
        tmp_path, "plain_method.py", _FRAMEWORK.format(base="object", init="pass", mark="")
    )
    assert found(tmp_path, path, CONFIDENT) == set()
