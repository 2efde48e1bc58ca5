"""Callers that reach a helper through ``from lib.train_util import *`` (#15): what they
pass to ``calc_error(opt, net, ...)`` types ``net`` as an explicit import would; a plain
object passed, or two star imports that both provide a ``calc_error``, say nothing."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_HELPER = """\
    import torch


    def calc_error(opt, net, dataset):
        with torch.no_grad():
            return net.forward(dataset[0]){mark}
    """

_MODELS = """\
    import torch


    class ShapeNet(torch.nn.Module):
        def forward(self, x):
            return x


    class Scorer:
        def forward(self, x):
            return x
    """

_TRAIN = """\
    import torch
    {imports}
    from lib.models import *


    def train(opt):
        net = {built}.to("cpu")
        return calc_error(opt, net, [1])
    """


def _project(tmp_path: Path, mark: str, imports: str, built: str) -> Path:
    write_source(tmp_path, "lib/__init__.py", "")
    write_source(tmp_path, "lib/models.py", _MODELS)
    write_source(tmp_path, "lib/other_util.py", _HELPER.format(mark=""))
    write_source(tmp_path, "apps/train.py", _TRAIN.format(imports=imports, built=built))
    return write_source(tmp_path, "lib/train_util.py", _HELPER.format(mark=mark))


def test_a_star_importer_passes_a_module(tmp_path: Path) -> None:
    path = _project(tmp_path, "  # HS101", "from lib.train_util import *", "ShapeNet()")
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 1


def test_a_star_importer_passes_a_plain_object(tmp_path: Path) -> None:
    path = _project(tmp_path, "", "from lib.train_util import *", "Scorer()")
    assert found(tmp_path, path, CONFIDENT) == set()


def test_two_star_imports_provide_the_helper(tmp_path: Path) -> None:
    both = "from lib.train_util import *\n    from lib.other_util import *"
    path = _project(tmp_path, "", both, "ShapeNet()")
    assert found(tmp_path, path, CONFIDENT) == set()
