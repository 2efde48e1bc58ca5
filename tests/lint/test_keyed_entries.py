"""Entries of a dict the methods of a class family hand each other (#15): ``model["net"]``
is a module when a method of the class or of a project base (another file) calls a
module-only method on the same spelling or stores a module there; a plain object stored
under the key, or nothing said about it, is no evidence. higher's functional copies
(``higher.patch.monkeypatch(net)``) are modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, findings_of, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_BASE = """\
    import torch


    class Learner:
        def train(self, batches):
            model = self.load_model()
            model["net"].eval()
            for x in batches:
                self.adapt(x, model)
    """

_SUB = """\
    import higher
    import torch

    from base import Learner


    class Maml(Learner):
        def load_model(self):
            model = dict.fromkeys(["net", "head", "optimizer"])
            model["head"] = torch.nn.Linear(2, 2)
            return model

        def adapt(self, x, model: dict):
            fast = higher.patch.monkeypatch(module=model["net"], copy_initial_weights=False)
            fast.forward(x)  # HS101
            model["head"].forward(x)  # HS101
            return model["net"].forward(x)  # HS101

        def predict(self, x, adapted: higher.patch._MonkeyPatchBase):
            return adapted.forward(x)  # HS101
    """

_PLAIN_BASE = """\
    import torch


    class Pipeline:
        def run(self, items):
            model = self.load_model()
            model["step"].reset()
            model["stage"].eval()
            for x in items:
                self.adapt(x, model)
    """

_PLAIN_SUB = """\
    import torch

    from base import Pipeline


    class Stage:
        def forward(self, x):
            return x


    class Flow(Pipeline):
        def load_model(self):
            model = dict.fromkeys(["step", "stage", "name"])
            model["stage"] = Stage()
            model["name"] = "flow"
            return model

        def adapt(self, x, model: dict):
            model["name"].forward(x)
            model["stage"].forward(x)
            return model["step"].forward(x)
    """


@pytest.mark.usefixtures("library_site")
def test_dict_entries_shown_modules_by_the_class_family(tmp_path: Path) -> None:
    write_source(tmp_path, "base.py", _BASE)
    path = write_source(tmp_path, "maml.py", _SUB)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 4
    vias = {f.line: f.message for f in findings_of(tmp_path, path, CONFIDENT)}
    assert "model['net'].eval(...) at base.py" in vias[17]
    assert "same class family" in vias[17]


def test_dict_entries_of_plain_objects_are_no_modules(tmp_path: Path) -> None:
    write_source(tmp_path, "base.py", _PLAIN_BASE)
    path = write_source(tmp_path, "flow.py", _PLAIN_SUB)
    assert found(tmp_path, path, CONFIDENT) == set()


_DELEGATING = """\
    import torch

    from {module} import {cls}


    class Platipus(object):
        def load_model(self, **kwargs):
            helper = {cls}()
            return helper.load_model(**kwargs)

        def adapt(self, x, model: dict):
            return model["{key}"].forward(x){mark}
    """


def test_dict_entries_of_a_class_the_builder_delegates_to(tmp_path: Path) -> None:
    write_source(tmp_path, "base.py", _BASE)
    write_source(tmp_path, "maml.py", _SUB)
    source = _DELEGATING.format(module="maml", cls="Maml", key="head", mark="  # HS101")
    path = write_source(tmp_path, "platipus.py", source)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(12, "HS101")}
    vias = {f.line: f.message for f in findings_of(tmp_path, path, CONFIDENT)}
    assert "in Maml.load_model" in vias[12]


def test_dict_entries_of_a_plain_class_the_builder_delegates_to(tmp_path: Path) -> None:
    write_source(tmp_path, "base.py", _PLAIN_BASE)
    write_source(tmp_path, "flow.py", _PLAIN_SUB)
    source = _DELEGATING.format(module="flow", cls="Flow", key="stage", mark="")
    path = write_source(tmp_path, "platipus.py", source)
    assert found(tmp_path, path, CONFIDENT) == set()
