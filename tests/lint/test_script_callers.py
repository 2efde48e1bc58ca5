"""Callers in script files without a ``def`` or ``class`` (#15): their module-level calls
count like any other file's (``net = Net(); predict(net, x)`` at a script's top level)."""

from __future__ import annotations

from pathlib import Path

from hookscope.lint import lint_run
from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_NETS = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)


class Scorer:
    def forward(self, x):
        return x
"""


def test_a_script_that_hands_a_module_to_a_helper(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/nets.py", _NETS)
    helpers = write_source(
        tmp_path,
        "pkg/evaluation.py",
        """\
        def predict(model, x):
            return model.forward(x)  # HS101
        """,
    )
    write_source(
        tmp_path,
        "train.py",
        """\
        import torch
        from pkg.nets import Net
        from pkg.evaluation import predict

        net = Net()
        print(predict(net, torch.zeros(1, 2)))
        """,
    )
    assert found(tmp_path, helpers, CONFIDENT) == expected_codes(helpers) != set()
    index = lint_run([str(tmp_path)], select=["HS1"], jobs=1).index
    assert index.import_lists is not None
    assert any(where.endswith("train.py") for where, _, _ in index.import_lists)


def test_a_script_that_hands_a_plain_object_keeps_the_helper_unflagged(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/nets.py", _NETS)
    helpers = write_source(
        tmp_path,
        "pkg/evaluation.py",
        """\
        def predict(model, x):
            return model.forward(x)
        """,
    )
    # a file with definitions hands a module; the script (no def, no class) a plain object
    write_source(
        tmp_path,
        "pkg/run.py",
        """\
        from pkg.nets import Net
        from pkg.evaluation import predict


        def main(x):
            return predict(Net(), x)
        """,
    )
    write_source(
        tmp_path,
        "score.py",
        """\
        from pkg.nets import Scorer
        from pkg.evaluation import predict

        scorer = Scorer()
        print(predict(scorer, 1))
        """,
    )
    assert found(tmp_path, helpers, CONFIDENT) == expected_codes(helpers) == set()
