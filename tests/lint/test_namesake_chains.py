"""Look-ups through the bases of namesake classes (an attribute, a class's kind) visit each
class once, however many paths of a big tree's class index lead to it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from hookscope.lint import analyze_file, lint_run
from hookscope.lint.engine.index import ClassIndex
from tests.lint.conftest import expected_codes, found, write_source

LEVELS = 16  # two namesakes a level: 2**16 paths from the first class to the last


@dataclass(frozen=True)
class _CountingIndex(ClassIndex):
    """The index the lint built, counting the names whose bases are looked up."""

    looked_up: list[str] = field(default_factory=list)

    def get(self, name: str) -> tuple[tuple[str, ...], ...] | None:
        self.looked_up.append(name)
        return super().get(name)


_NET_USER = """\
import torch


class Net(D0):
    def run(self, x):
        return self.layer.forward(x){comment}
"""


def _chains(tmp_path: Path, last: str, user: str) -> Path:
    """Two namesakes of ``D0`` to ``D{LEVELS - 1}`` (``class Di(Dj)`` and ``class Di(x.Dj)``),
    the first file ending with ``last`` (``D{LEVELS}``); ``user`` written to user.py."""
    chain = "".join(f"class D{i}(D{i + 1}):\n    pass\n\n\n" for i in range(LEVELS))
    write_source(tmp_path, "chain_a.py", f"import torch\n\n\n{chain}{last}")
    other = "".join(f"class D{i}(x.D{i + 1}):\n    pass\n\n\n" for i in range(LEVELS))
    write_source(tmp_path, "chain_b.py", other)
    return write_source(tmp_path, "user.py", user)


def _fields(index: ClassIndex) -> dict[str, object]:
    return {f.name: getattr(index, f.name) for f in fields(ClassIndex)}


def test_bases_of_namesakes_are_followed_once_each(tmp_path: Path) -> None:
    user = _chains(tmp_path, f"class D{LEVELS}:\n    pass\n", _NET_USER.format(comment=""))
    run = lint_run([tmp_path], select=["HS1"], config=False, jobs=1)
    assert run.findings == []  # ``layer`` is bound nowhere
    index = _CountingIndex(**_fields(run.index))  # type: ignore[arg-type]
    assert analyze_file(str(user), index, run.codes) == []
    assert 0 < index.looked_up.count("D3") <= 2  # not once a path (2**3 of them)
    assert len(index.looked_up) < 10 * LEVELS


def test_an_attribute_bound_at_the_end_of_a_namesake_chain_is_found(tmp_path: Path) -> None:
    last = (
        f"class D{LEVELS}(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    )
    layer = "        self.layer = torch.nn.Linear(2, 2)\n"
    user = _chains(tmp_path, last + layer, _NET_USER.format(comment="  # HS101"))
    assert found(tmp_path, user) == expected_codes(user)


class _CountingDefs(dict[str, tuple[tuple[tuple[str, ...], str], ...]]):
    """The index's definitions by name, counting the names looked up."""

    looked_up: list[str]

    def get(self, name, default=None):  # type: ignore[no-untyped-def,override]
        self.looked_up.append(name)
        return super().get(name, default)


def test_the_kind_of_a_class_in_a_cycle_of_namesakes_is_found_once(tmp_path: Path) -> None:
    # the last level names the first: every path meets a cycle
    user = "def run(x):\n    m = D0()\n    return m.forward(x)\n"
    user_path = _chains(tmp_path, f"class D{LEVELS}(D0):\n    pass\n", user)
    run = lint_run([tmp_path], select=["HS1"], config=False, jobs=1)
    assert run.findings == []  # a class whose bases go round in a circle is no module
    defs = _CountingDefs(run.index.defs)
    defs.looked_up = []
    index = ClassIndex(**{**_fields(run.index), "defs": defs})  # type: ignore[arg-type]
    assert analyze_file(str(user_path), index, run.codes) == []
    assert len(defs.looked_up) < 10 * LEVELS  # each name a few times, not once a path
