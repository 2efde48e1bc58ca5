"""A caller's ``other.predict(...)`` does not hide the calls of a module-level
``predict`` that decide its parameter: ``llla.predict`` after ``from laplace import llla``
is another module's function, ``clf.predict`` a method of an object (#15)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source


def _project(tmp_path: Path, passed: str) -> Path:
    write_source(tmp_path, "laplace/__init__.py", "")
    write_source(
        tmp_path,
        "laplace/llla.py",
        """\
        def predict(loader, model, weights):
            return [weights for _ in loader]
        """,
    )
    write_source(tmp_path, "util/__init__.py", "")
    path = write_source(
        tmp_path,
        "util/evaluation.py",
        """\
        import torch


        def predict(loader, model):
            return [model.forward(x) for x in loader]  # HS101
        """,
    )
    write_source(
        tmp_path,
        "run.py",
        f"""\
        import torch
        from torch import nn
        from laplace import llla
        from util.evaluation import *


        class Net(nn.Module):
            def forward(self, x):
                return x


        class Forest:
            def predict(self, x):
                return x

            def forward(self, x):
                return x


        model = {passed}
        clf = Forest()
        loader = [torch.zeros(1)]
        out = predict(loader, model)
        laplace_out = llla.predict(loader, model, 0.1)
        labels = clf.predict(loader)
        """,
    )
    return path


def test_a_helper_called_next_to_namesakes_gets_the_module(tmp_path: Path) -> None:
    path = _project(tmp_path, "Net()")
    assert found(tmp_path, path) == expected_codes(path)


def test_a_helper_handed_a_plain_object_next_to_namesakes_is_not_flagged(tmp_path: Path) -> None:
    path = _project(tmp_path, "Forest()")
    assert found(tmp_path, path) == set()
