"""Static factory methods of a class in another file (#15, fresh14): ``m =
ModelFactory.get_model(kind)`` is what ``get_model`` returns (a module when every return
builds one), not an instance of ``ModelFactory``; a factory of plain objects gives plain ones."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source


def test_a_static_factory_of_another_file_gives_what_it_returns(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    write_source(
        tmp_path,
        "pkg/factory.py",
        """\
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                return x


        class Scorer:
            def forward(self, x):
                return x


        class ModelFactory:
            @staticmethod
            def get_model(kind):
                if kind == "wide":
                    return nn.Linear(4, 8)
                return Net()


        class ScorerFactory:
            @staticmethod
            def get_scorer(kind):
                return Scorer()
        """,
    )
    path = write_source(
        tmp_path,
        "main.py",
        """\
        import torch

        from pkg.factory import ModelFactory, ScorerFactory


        def run(kind):
            model = ModelFactory.get_model(kind)
            scorer = ScorerFactory.get_scorer(kind)
            out = model.forward(torch.ones(4))  # HS101
            return scorer.forward(out)
        """,
    )
    assert found(tmp_path, path, ("HS101", "HS102", "HS103", "HS104")) == expected_codes(path)
