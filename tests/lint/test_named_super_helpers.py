"""``super(Cls, self).forward(x)`` in a helper method runs the parent ``forward`` on the
module itself without its hooks, like ``self.forward`` there (HS102, never fixed: ``self(x)``
would run the class's own ``forward``); DeepSpeed's engine classes are modules (#15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, findings_of, found, write_source


def test_a_named_super_forward_in_a_helper_is_hs102(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "nets.py",
        """\
        import torch
        from torch import nn


        class Base(nn.Module):
            def forward(self, x):
                return x


        class Shifted(Base):
            def forward(self, x):
                return super(Shifted, self).forward(x) - self.center(x)

            def center(self, x):
                return super(Shifted, self).forward(x).mean()

            def test(self, x):
                return super(Shifted, self).forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
    (finding,) = findings_of(tmp_path, path)
    assert not finding.fixable
    assert finding.message.startswith("`super(Shifted, self).forward(...)` in `test`")


def test_a_named_super_forward_in_a_plain_class_is_not(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "nodes.py",
        """\
        import torch


        class Node:
            def forward(self, x):
                return x


        class Shifted(Node):
            def test(self, x):
                return super(Shifted, self).forward(x)
        """,
    )
    assert found(tmp_path, path) == set()


@pytest.mark.usefixtures("library_site")
def test_a_subclass_of_a_deepspeed_engine_is_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "engine.py",
        """\
        import torch
        from deepspeed.runtime.pipe.engine import PipelineEngine


        class Engine(PipelineEngine):
            def exec_forward(self, inputs):
                return super(PipelineEngine, self).forward(inputs)  # HS102

            def step(self, inputs):
                return self.forward(inputs)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_namesake_engine_of_another_library_is_not(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "engine.py",
        """\
        import torch
        from otherlib.pipe.engine import PipelineEngine


        class Engine(PipelineEngine):
            def step(self, inputs):
                return self.forward(inputs)
        """,
    )
    assert found(tmp_path, path) == set()
