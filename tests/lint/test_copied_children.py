"""Children taken out of copies (#15): ``list(model.children())[0]``,
``next(iter(model.children()))``, ``dict(model.named_modules())[name]`` and ``max(nets,
key=score)`` are modules, as ``for m in list(model.children())`` already was; copies of
plain objects are not, and a project function named ``list`` is not the builtin."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_CHILDREN = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x


def first_child(x):
    children = list(Net().children())
    return children[0].forward(x)  # HS101


def last_child(x):
    return list(Net().children())[-1].forward(x)  # HS101


def next_child(x):
    first = next(iter(Net().children()))
    return first.forward(x)  # HS101


def named(x):
    modules = dict(Net().named_modules())
    return modules["fc"].forward(x)  # HS101
"""

_PLAIN = """\
import torch


class Step:
    def forward(self, x):
        return x


def list(items):
    return items


def copied(x):
    steps = tuple([Step(), Step()])
    return steps[0].forward(x)


def shadowed(model, x):
    children = list(model.children())
    return children[0].forward(x)


def batches(loader, x):
    batch = next(iter(loader))
    return batch.forward(x)
"""


def test_children_out_of_copies(tmp_path: Path) -> None:
    path = write_source(tmp_path, "children.py", _CHILDREN)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 4


def test_copies_of_plain_objects(tmp_path: Path) -> None:
    path = write_source(tmp_path, "plain.py", _PLAIN)
    assert found(tmp_path, path, CONFIDENT) == set()


def test_the_best_of_a_list_of_modules_is_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "ensemble.py",
        """\
        from torch import nn


        class Stage:
            def forward(self, x):
                return x


        def pick(x, scores):
            nets = [nn.Linear(2, 2), nn.Linear(2, 2)]
            stages = [Stage(), Stage()]
            best = max(nets, key=lambda n: scores[id(n)])
            worst = min(stages, key=lambda s: scores[id(s)])
            return best.forward(x), worst.forward(x)  # HS101
        """,
    )
    assert found(tmp_path, path, ("HS101", "HS102", "HS103", "HS104")) == expected_codes(path)
