"""Names a function declares ``global`` (#15): the module's binding, which a
``model = model.to(device)`` there keeps (``global hubert_model`` in a helper)."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")


def test_a_global_module_rebound_from_itself_in_a_function(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "extract.py",
        """\
        from torch import nn

        encoder = nn.Linear(2, 2)


        def features(x, device="cuda"):
            global encoder
            encoder = encoder.to(device)
            if x is None:
                return None
            return encoder.forward(x)  # HS101
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)


def test_a_global_plain_object_rebound_from_itself_stays_unflagged(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "extract.py",
        """\
        class Scorer:
            def to(self, device):
                return self

            def forward(self, x):
                return x


        scorer = Scorer()


        def score(x, device="cuda"):
            global scorer
            scorer = scorer.to(device)
            return scorer.forward(x)
        """,
    )
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == set()
