"""Modules shown by what is done to them (#15): a project function that loads a state
dict into the object it returns, the elements of a registered child (``_modules``)
that is iterated, directly or through ``list(...)``, and ``self`` in an abstract mixin
that only modules (or mixins of them) extend, and the items of a dict filled one key at a
time, and slices of filled lists. Each has a plain twin."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source


def test_a_function_that_loads_a_state_dict_into_what_it_returns_returns_a_module(
    tmp_path: Path,
) -> None:
    write_source(
        tmp_path,
        "pkg/load.py",
        """\
        import torch

        TABLE = {}


        def load_model(name, path):
            model = TABLE[name]()
            model.load_state_dict(torch.load(path))
            return model


        def load_plain(name):
            thing = TABLE[name]()
            thing.update({})
            return thing
        """,
    )
    agent = write_source(
        tmp_path,
        "pkg/agent.py",
        """\
        from pkg.load import load_model, load_plain


        class Agent:
            def __init__(self, name, path):
                self.model = load_model(name, path)
                self.plain = load_plain(name)

            def act(self, x):
                y = self.model.forward(x)  # HS101
                return self.plain.forward(y)
        """,
    )
    assert found(tmp_path, agent) == expected_codes(agent)


def test_elements_of_an_iterated_registered_child_are_modules(tmp_path: Path) -> None:
    relevance = write_source(
        tmp_path,
        "relevance.py",
        """\
        class Relevance:
            def __init__(self, model, table):
                self.model = model
                self.table = table

            def generate(self, x):
                outs = [x]
                for layer in list(self.model._modules["features"]):
                    outs.append(layer.forward(outs[-1]))  # HS101
                for layer in self.model._modules["classifier"]:
                    outs.append(layer.forward(outs[-1]))  # HS101
                for step in list(self.table["features"]):
                    outs.append(step.forward(outs[-1]))
                return outs
        """,
    )
    assert found(tmp_path, relevance) == expected_codes(relevance)


def test_an_abstract_mixin_extended_by_a_mixin_and_used_only_by_modules(tmp_path: Path) -> None:
    mixin = write_source(
        tmp_path,
        "pkg/export.py",
        """\
        from abc import ABC


        class Exportable(ABC):
            def export(self, x):
                return self.forward(x)  # HS102


        class ExportableModel(Exportable):
            def example(self):
                return None


        class Checkable(ABC):
            def check(self, x):
                return self.forward(x)
        """,
    )
    write_source(
        tmp_path,
        "pkg/nets.py",
        """\
        from torch import nn

        from pkg.export import Checkable, Exportable, ExportableModel


        class Encoder(nn.Module, Exportable):
            def forward(self, x):
                return x


        class Model(nn.Module, ExportableModel):
            def forward(self, x):
                return x


        class Net(nn.Module, Checkable):
            def forward(self, x):
                return x


        class Report(Checkable):
            def forward(self, x):
                return x
        """,
    )
    assert found(tmp_path, mixin) == expected_codes(mixin)


def test_a_dict_attribute_filled_item_by_item_holds_what_was_put_in(tmp_path: Path) -> None:
    wrapper = write_source(
        tmp_path,
        "wrapper.py",
        """\
        from torch import nn


        class Plain:
            def forward(self, x):
                return x


        class Wrapper:
            def __init__(self):
                self.models = {}
                self.models["first"] = nn.Linear(2, 2).to("cpu")
                self.models["second"] = nn.Linear(2, 2)
                self.plains = {}
                self.plains["first"] = Plain()

            def forward(self, position, x):
                model = self.models[position]
                y = model.forward(x)  # HS101
                return self.plains[position].forward(y)
        """,
    )
    assert found(tmp_path, wrapper) == expected_codes(wrapper)


def test_a_slice_of_a_filled_list_holds_the_same_kind(tmp_path: Path) -> None:
    pyramid = write_source(
        tmp_path,
        "pyramid.py",
        """\
        from torch import nn


        class Step:
            def forward(self, x):
                return x


        class Pyramid(nn.Module):
            def __init__(self, n):
                super().__init__()
                convs = []
                steps = []
                for i in range(n):
                    conv = nn.Conv2d(3, 3, 1)
                    self.add_module(f"conv{i}", conv)
                    convs.append(conv)
                    steps.append(Step())
                self.convs = convs[::-1]
                self.steps = steps[::-1]

            def forward(self, x):
                for conv, step in zip(self.convs[1:], self.steps[1:]):
                    x = conv.forward(x)  # HS101
                    x = step.forward(x)
                return x
        """,
    )
    assert found(tmp_path, pyramid) == expected_codes(pyramid)
