"""A plain class that keeps a constructor argument and calls ``.forward`` on it
(``class Pipeline: def __init__(self, model, vocab): self.model = model``), built only
in other files: ``self.model`` (and ``pipeline.model`` where it is built) is a module
when every construction in the project passes one, by position or by keyword. One
construction passing a plain object, or an argument that cannot be resolved, leaves it
unresolved (an HS104 guess at most). A tree under no project root is indexed with
every file linted in it, those of a package with its own ``pyproject.toml`` too."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hookscope.lint import lint
from tests.lint.conftest import expected_codes

EVERY = ("HS101", "HS102", "HS103", "HS104")

_PIPELINE = """\
    class Pipeline:
        def __init__(self, model, vocab):
            self.model = model
            self.vocab = vocab

        def generate(self, tokens):
            return self.model.forward(tokens){mark}
    """

_MODELS = """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            return x


    class Plain:
        def forward(self, x):
            return x
    """

_DEMO = """\
    from pkg.models import Net
    from pkg.utils import Pipeline

    model = Net()
    pipeline = Pipeline(model, "vocab.txt")
    out = pipeline.model.forward([1, 2]){mark}
    """

# The second construction, by keyword: a module, a plain object, or a value of an
# import the project does not hold.
_OTHERS = {
    "module": "from pkg.models import Net\n\npipe = Pipeline(vocab='v', model=Net())\n",
    "plain": "from pkg.models import Plain\n\npipe = Pipeline(vocab='v', model=Plain())\n",
    "unknown": "from outside import load\n\npipe = Pipeline(vocab='v', model=load())\n",
}


def _write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def _project(root: Path, other: str, mark: str, nested: bool = False) -> tuple[Path, Path]:
    """``pkg/`` with the class and the models, ``demo/`` building it; a ``.git`` root, or
    (``nested``) no root around a ``src/`` that has its own ``pyproject.toml``."""
    pkg = root / "src" if nested else root
    _write(pkg / ("pyproject.toml" if nested else ".git/HEAD"), "")
    utils = _write(pkg / "pkg/utils.py", _PIPELINE.format(mark=mark))
    _write(pkg / "pkg/__init__.py", "")
    _write(pkg / "pkg/models.py", _MODELS)
    demo = _write(root / "demo/run.py", _DEMO.format(mark=mark))
    _write(root / "demo/other.py", "from pkg.utils import Pipeline\n" + _OTHERS[other])
    return utils, demo


def _found(root: Path, path: Path, codes: tuple[str, ...] = EVERY) -> set[tuple[int, str]]:
    findings = lint(root, select=list(codes), config=False)
    return {(f.line, f.code) for f in findings if Path(f.path).resolve() == path.resolve()}


def test_every_construction_in_other_files_passes_a_module(tmp_path: Path) -> None:
    utils, demo = _project(tmp_path, "module", "  # HS101")
    assert _found(tmp_path, utils) == expected_codes(utils)
    assert _found(tmp_path, demo) == expected_codes(demo)


@pytest.mark.parametrize("other", ["plain", "unknown"])
def test_one_construction_passes_no_module(tmp_path: Path, other: str) -> None:
    utils, demo = _project(tmp_path, other, "")
    for path in (utils, demo):
        assert _found(tmp_path, path, ("HS101", "HS102", "HS103")) == set()
        assert {code for _, code in _found(tmp_path, path)} <= {"HS104"}


def test_a_tree_without_a_root_sees_its_nested_package(tmp_path: Path) -> None:
    utils, demo = _project(tmp_path, "module", "  # HS101", nested=True)
    assert _found(tmp_path, demo) == expected_codes(demo)
    # The package is its own project, as when its file is linted alone: its users
    # outside it are not its callers.
    alone = {(f.line, f.code) for f in lint(utils, select=list(EVERY), config=False)}
    assert _found(tmp_path, utils) == alone == {(7, "HS104")}
