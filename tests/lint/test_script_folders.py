"""Code the lint was not tuned on (#15, fresh12): scripts importing their own folder's
module (``from networks import Actor`` with a ``networks.py`` in several folders), objects
of plain classes held in a list and iterated, and class attributes that subclasses set
to a module class."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_TORCH_NETWORKS = """\
from torch import nn


class Actor(nn.Module):
    def forward(self, x):
        return x
"""

_PLAIN_NETWORKS = """\
class Actor:
    def forward(self, x):
        return x
"""

_AGENT = """\
import torch
from networks import Actor


class Agent:
    def __init__(self):
        self.actor = Actor()

    def act(self, state):
        return self.actor.forward(state){mark}
"""


def test_a_script_imports_its_own_folders_module(tmp_path: Path) -> None:
    write_source(tmp_path, "torch_agent/networks.py", _TORCH_NETWORKS)
    write_source(tmp_path, "plain_agent/networks.py", _PLAIN_NETWORKS)
    write_source(tmp_path, "third/networks.py", _PLAIN_NETWORKS)
    module = write_source(tmp_path, "torch_agent/agent.py", _AGENT.format(mark="  # HS101"))
    plain = write_source(tmp_path, "plain_agent/run_plain.py", _AGENT.format(mark=""))
    assert found(tmp_path, module, CONFIDENT) == expected_codes(module) == {(10, "HS101")}
    assert found(tmp_path, plain, ("HS1",)) == set()


def test_a_package_module_imports_from_the_project_root(tmp_path: Path) -> None:
    # In a package folder, ``import networks`` is the root's module, not the sibling.
    write_source(tmp_path, "networks.py", _TORCH_NETWORKS)
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(tmp_path, "pkg/networks.py", _PLAIN_NETWORKS)
    module = write_source(tmp_path, "pkg/agent.py", _AGENT.format(mark="  # HS101"))
    assert found(tmp_path, module, CONFIDENT) == expected_codes(module)


_HOLDER = """\
import torch
from agents import Agent, Other


class Team:
    def __init__(self, n):
        self.agents = []
        for _ in range(n):
            self.agents.append(Agent())
        self.pairs = [Agent() for _ in range(n)]
        self.mixed = [Agent(), Other()]

    def act(self, x):
        for agent in self.agents:
            agent.actor.forward(x){mark}
        for i, agent in enumerate(self.pairs):
            agent.actor.forward(x){mark}
        for member in self.mixed:  # of two classes: its attributes are not looked up
            member.actor.forward(x)
        return self.agents[0].actor.forward(x){mark}
"""

_AGENTS = """\
from nets import Actor, Plain


class Agent:
    def __init__(self):
        self.actor = {actor}()


class Other:
    def __init__(self):
        self.actor = Plain()
"""


def test_attributes_of_plain_objects_held_in_a_list(tmp_path: Path) -> None:
    write_source(
        tmp_path, "nets.py", _TORCH_NETWORKS + "\n\n" + _PLAIN_NETWORKS.replace("Actor", "Plain")
    )
    write_source(tmp_path, "agents.py", _AGENTS.format(actor="Actor"))
    path = write_source(tmp_path, "team.py", _HOLDER.format(mark="  # HS101"))
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 3


def test_plain_attributes_of_plain_objects_held_in_a_list(tmp_path: Path) -> None:
    write_source(
        tmp_path, "nets.py", _TORCH_NETWORKS + "\n\n" + _PLAIN_NETWORKS.replace("Actor", "Plain")
    )
    write_source(tmp_path, "agents.py", _AGENTS.format(actor="Plain"))
    path = write_source(tmp_path, "team.py", _HOLDER.format(mark=""))
    assert found(tmp_path, path, ("HS1",)) == set()


_BUILT_BY_ITS_NAMESAKE = """\
import torch
from torch import nn


class Perceptual:
    def features(self):
        return {built}

    def __init__(self):
        self.features = self.features()

    def loss(self, x):
        return self.features.forward(x){mark}
"""


def test_an_attribute_built_by_the_method_it_replaces(tmp_path: Path) -> None:
    # ``self.features = self.features()``: the right side calls the method.
    module = write_source(
        tmp_path,
        "loss.py",
        _BUILT_BY_ITS_NAMESAKE.format(built="nn.Sequential()", mark="  # HS101"),
    )
    assert found(tmp_path, module, CONFIDENT) == expected_codes(module) == {(13, "HS101")}


def test_a_plain_attribute_built_by_the_method_it_replaces(tmp_path: Path) -> None:
    write_source(tmp_path, "stages.py", _PLAIN_NETWORKS)
    plain = write_source(
        tmp_path,
        "plain_loss.py",
        "from stages import Actor\n" + _BUILT_BY_ITS_NAMESAKE.format(built="Actor()", mark=""),
    )
    assert found(tmp_path, plain, ("HS1",)) == set()


_TEST_BASE = """\
import unittest


class BaseForwardTest(unittest.TestCase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.CLASS_TYPE = type(None)

    def _build(self):
        model = self.CLASS_TYPE(3)
        return model.to("cpu")

    def _run(self, model):
        return model.forward(1){mark}

    def test_forward(self):
        self._run(self._build())


class BaseBackwardTest(unittest.TestCase):
    def _run(self, model):
        return model.forward(2)

    def test_backward(self):
        self._run(None)
"""

_TEST_CASES = """\
from base import BaseForwardTest
from nets import {cls}


class NetTest(BaseForwardTest):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.CLASS_TYPE = {cls}
"""


def test_a_class_placeholder_that_test_subclasses_set_to_a_module(tmp_path: Path) -> None:
    write_source(
        tmp_path, "nets.py", _TORCH_NETWORKS + "\n\n" + _PLAIN_NETWORKS.replace("Actor", "Plain")
    )
    write_source(tmp_path, "tests/test_net.py", _TEST_CASES.format(cls="Actor"))
    base = write_source(tmp_path, "tests/base.py", _TEST_BASE.format(mark="  # HS101"))
    assert found(tmp_path, base, CONFIDENT) == expected_codes(base) == {(14, "HS101")}


def test_a_class_placeholder_that_test_subclasses_set_to_a_plain_class(tmp_path: Path) -> None:
    write_source(
        tmp_path, "nets.py", _TORCH_NETWORKS + "\n\n" + _PLAIN_NETWORKS.replace("Actor", "Plain")
    )
    write_source(tmp_path, "tests/test_net.py", _TEST_CASES.format(cls="Plain"))
    base = write_source(tmp_path, "tests/base.py", _TEST_BASE.format(mark=""))
    assert found(tmp_path, base, ("HS1",)) == set()


_OUTSIDE_BASE = """\
import torch
from outside_framework import Base


class Runner(Base):
    def __init__(self, net):
        self.modules = net

    def forward(self, x):
        {body}

    def test(self, x):
        with torch.no_grad():
            return self.forward(x){mark}
"""


def test_a_module_only_method_called_on_self_shows_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "runner.py",
        _OUTSIDE_BASE.format(body="return [p for p in self.parameters()]", mark="  # HS102"),
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(14, "HS102")}


def test_an_attribute_named_like_a_module_method_shows_nothing(tmp_path: Path) -> None:
    # ``self.modules = net`` then ``self.modules(x)``: the attribute, not ``Module.modules``.
    path = write_source(
        tmp_path, "runner.py", _OUTSIDE_BASE.format(body="return self.modules(x)", mark="")
    )
    assert found(tmp_path, path, CONFIDENT) == set()


_PARTIAL = """\
from functools import partial

import torch


def _estimate(betas, model, mels):
    return model.forward(mels){mark}


def search(model, grid, mels):
    {use}
    process = partial(_estimate, model=model, mels=mels)
    return [process(betas) for betas in grid]
"""


def test_a_partial_binds_an_argument_its_function_uses_as_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "grid.py",
        _PARTIAL.format(use="device = next(model.parameters()).device", mark="  # HS101"),
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(7, "HS101")}


def test_a_partial_binds_an_argument_of_unknown_use(tmp_path: Path) -> None:
    path = write_source(tmp_path, "grid.py", _PARTIAL.format(use="model.reset()", mark=""))
    assert found(tmp_path, path, CONFIDENT) == set()
