"""Rows of a ``ModuleList`` unpacked in a loop (#15, fresh14): ``for attn, ff in
self.layers`` where every row appended to (or built into) ``self.layers`` is a
``ModuleList([...])``/``Sequential(...)`` gives modules; rows of another kind (a
``ModuleDict`` unpacks into its keys) or of a plain list give nothing confident."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def test_names_unpacked_from_rows_of_module_lists_are_modules(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "blocks.py",
        """\
        from torch import nn


        class Memory(nn.Module):
            def forward(self, x, state=None):
                return x, state


        class Transformer(nn.Module):
            def __init__(self, depth):
                super().__init__()
                self.layers = nn.ModuleList([])
                for _ in range(depth):
                    self.layers.append(nn.ModuleList([Memory(), nn.Linear(4, 4)]))
                self.heads = nn.ModuleList(
                    [nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(depth)]
                )

            def forward(self, x):
                for mem, ff in self.layers:
                    x, _ = mem.forward(x, state=None)  # HS101
                    x = ff(x)
                for proj, act in self.heads:
                    x = act.forward(proj(x))  # HS101
                return x
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 2


def test_rows_of_another_kind_give_nothing_confident(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "pairs.py",
        """\
        from torch import nn


        class Stage:
            def forward(self, x):
                return x


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.tables = nn.ModuleList([nn.ModuleDict({"a": nn.ReLU(), "b": nn.ReLU()})])
                self.stages = [(Stage(), Stage())]

            def forward(self, x):
                for first, second in self.tables:
                    x = x + len(first.forward(second))
                for stage, other in self.stages:
                    x = stage.forward(other.forward(x))
                return x
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == set()
