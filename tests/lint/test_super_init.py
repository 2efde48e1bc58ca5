"""A base's ``__init__`` parameter handed on by subclasses (#15): ``class GanTrainer(
BaseTrainer)`` whose own ``__init__`` runs ``super().__init__(model, lr)`` builds the base
there, so ``BaseTrainer``'s ``self.model`` is what that call passes: the subclass's own
parameter, given by ``GanTrainer(Net())``. A plain object handed on stays plain."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

EVERY = ("HS101", "HS102", "HS103", "HS104")

_BASE = """\
    class BaseTrainer:
        def __init__(self, model, lr):
            self.model = model
            self.lr = lr

        def evaluate(self, x):
            return self.model.forward(x){mark}
    """

_SUBCLASS = """\
    import torch
    from torch import nn

    from base import BaseTrainer


    class Net(nn.Module):
        def forward(self, x):
            return x


    class Stage:
        def forward(self, x):
            return x


    class GanTrainer(BaseTrainer):
        def __init__(self, model, lr=0.1):
            super().__init__(model, lr)
            self.steps = 0

        def step(self, x):
            self.steps += 1
            return self.model.forward(x){mark}


    def main():
        return GanTrainer({built}).step(torch.ones(1))
    """


def test_a_module_handed_to_the_base_through_super_init(tmp_path: Path) -> None:
    base = write_source(tmp_path, "base.py", _BASE.format(mark="  # HS101"))
    sub = write_source(tmp_path, "train.py", _SUBCLASS.format(mark="  # HS101", built="Net()"))
    assert found(tmp_path, base, EVERY) == expected_codes(base)
    assert found(tmp_path, sub, EVERY) == expected_codes(sub)


def test_a_plain_object_handed_to_the_base_through_super_init(tmp_path: Path) -> None:
    base = write_source(tmp_path, "base.py", _BASE.format(mark=""))
    sub = write_source(tmp_path, "train.py", _SUBCLASS.format(mark="", built="Stage()"))
    assert found(tmp_path, base, EVERY) == set()
    assert found(tmp_path, sub, EVERY) == set()
