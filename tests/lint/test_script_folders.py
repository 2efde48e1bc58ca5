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
