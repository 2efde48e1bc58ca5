"""The from-import lists come with the class index: the same as reading the files again."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookscope.lint import lint_run
from hookscope.lint.engine.index import merge
from hookscope.lint.engine.runner import project_index
from hookscope.lint.languages import LANGUAGES
from hookscope.lint.python.index.classes import scan_classes
from hookscope.lint.python.index.importlists import import_lists
from hookscope.lint.python.resolution.callsites import importers

FILES = {
    "pkg/__init__.py": "from .nets import Net  # re-exported\n",
    "pkg/nets.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n",
    "pkg/train.py": (
        "from pkg.nets import (\n    Net,  # the model\n)\nfrom .util import *\n\n\n"
        "def build():\n    from torch import nn; return Net()\n"
    ),
    "pkg/util.py": "def helper():\n    return 1\n",
    "pkg/plain.py": "X = 1\n",  # no import: no lists
    "pkg/script.py": "from pkg.nets import Net\n\nnet = Net()\n",  # no def, no class
    "pkg/Model.cs": "using TorchSharp;\nclass M : Module {}\n",
}


def _tree(root: Path, marker: bool) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if marker:
        (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    return root / "pkg"


@pytest.mark.parametrize("marker", [True, False])
def test_the_index_carries_the_lists_that_reading_the_files_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    pkg = _tree(tmp_path, marker)
    for _ in range(2):  # cold, then (with a project) from the warm cache
        index = lint_run([str(pkg)], select=["HS1"], jobs=1).index
        assert index.import_lists is not None
        # (reading the files again covers those with definitions only; the scan also
        # records scripts without them, not a bare package ``__init__``)
        read = importers._import_lists(index)
        assert [lists for lists in index.import_lists if lists in read] == read
        files = [where for where, _, _ in index.import_lists]
        assert any(f.endswith("script.py") for f in files)
        assert not any(f.endswith("__init__.py") for f in files)
        assert files == sorted(files)
        assert all(not f.endswith("plain.py") for f in files)
        train = next(lists for lists in index.import_lists if lists[0].endswith("train.py"))
        assert train[2] == b"pkg.nets\n.util\ntorch"
        assert b"Net," in train[1] and b"#" not in train[1]  # comments dropped
    if marker:  # a single file's run uses the same (cached) project index
        single = project_index(str(pkg / "nets.py"), LANGUAGES)
        assert single.import_lists == index.import_lists


def test_an_index_built_without_lists_makes_callers_read_the_files(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("from a import B\n\n\nclass C(B):\n    pass\n", encoding="utf-8")
    index = merge(scan_classes(path.read_bytes(), str(path)))
    assert index.import_lists is None
    assert importers._import_lists(index) == [(str(path), b"B", b"a")]


def test_no_lists_without_the_word_import() -> None:
    assert import_lists(b"class C:\n    pass\n", "c.py") is None
    assert import_lists(b"import os\n", "c.py") == ("c.py", b"", b"")
