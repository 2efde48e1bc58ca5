"""A class named like its base in another module: ``class Discriminator(gan.Discriminator)``
derives from that module's class, not from itself (#15)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source


def _base_file(tmp_path: Path, base: str) -> None:
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(tmp_path, "pkg/nets/__init__.py", "from .gan import *\n")
    write_source(
        tmp_path,
        "pkg/nets/gan.py",
        f"""\
        import torch.nn as nn


        class Discriminator({base}):
            def forward(self, x):
                return x
        """,
    )


def test_a_namesake_of_a_module_base_is_a_module(tmp_path: Path) -> None:
    _base_file(tmp_path, "nn.Module")
    path = write_source(
        tmp_path,
        "pkg/info.py",
        """\
        import torch
        from pkg.nets import gan


        class Discriminator(gan.Discriminator):
            def train_step(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_namesake_of_a_plain_base_is_not(tmp_path: Path) -> None:
    _base_file(tmp_path, "object")
    path = write_source(
        tmp_path,
        "pkg/info.py",
        """\
        import torch
        from pkg.nets import gan


        class Discriminator(gan.Discriminator):
            def train_step(self, x):
                return self.forward(x)
        """,
    )
    assert found(tmp_path, path) == set()
