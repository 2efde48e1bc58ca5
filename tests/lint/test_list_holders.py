"""A plain list-like holder class (``append`` that stores its argument, ``__getitem__``)
holds what the code appends to it: ``self.nets = Holder(self, "flow")`` then
``self.nets.append(Block())`` (#15)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

_HOLDER = """\
import torch
from torch import nn


class Holder(object):
    def __init__(self, owner, prefix):
        self.owner = owner
        self.prefix = prefix
        self.count = 0

    def append(self, item):
        self.owner.add_module(self.prefix + str(self.count), item)
        self.count += 1

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        return getattr(self.owner, self.prefix + str(i))


class Block(nn.Module):
    def forward(self, x):
        return x


class Step:
    def forward(self, x):
        return x


"""


def test_items_appended_to_a_holder_are_modules(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "flow.py",
        _HOLDER
        + """\
class Flow(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.nets = Holder(self, "flow")
        for _ in range(n):
            block = Block()
            self.nets.append(block)

    def forward(self, x):
        for net in self.nets:
            x = net.forward(x)  # HS101
        return self.nets[0].forward(x)  # HS101
""",
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_plain_items_or_a_holder_without_items_say_nothing(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "flow.py",
        _HOLDER
        + """\
class Log:
    def __init__(self):
        self.seen = []

    def append(self, item):
        self.seen.append(item)


class Flow(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.steps = Holder(self, "step")
        self.log = Log()
        for _ in range(n):
            self.steps.append(Step())
            self.log.append(Block())

    def forward(self, x):
        for step in self.steps:
            x = step.forward(x)
        for entry in self.log:
            x = entry.forward(x)
        return x
""",
    )
    assert found(tmp_path, path) == set()


def test_a_holder_of_another_file_holds_what_is_appended(tmp_path: Path) -> None:
    holder, _, rest = _HOLDER.partition("class Block")
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(
        tmp_path, "pkg/holder.py", holder.replace("import torch\nfrom torch import nn\n", "")
    )
    path = write_source(
        tmp_path,
        "pkg/flow.py",
        "import torch\nfrom torch import nn\nfrom pkg.holder import Holder\n\n\nclass Block"
        + rest
        + """\
class Flow(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.nets = Holder(self, "flow")
        self.steps = Holder(self, "step")
        for _ in range(n):
            self.nets.append(Block())
            self.steps.append(Step())

    def forward(self, x):
        for net in self.nets:
            x = net.forward(x)  # HS101
        for step in self.steps:
            x = step.forward(x)
        return x
""",
    )
    assert found(tmp_path, path) == expected_codes(path)
