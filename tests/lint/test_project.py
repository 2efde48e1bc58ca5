"""One project index for every front end; guesses are never fixed (issue #15)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookscope.cli.main import main
from hookscope.lint import lint
from hookscope.lint.engine.project import CACHE_DIR

HELPERS = "class Kinematics:\n    def forward(self, a):\n        return a + 1\n"
MODEL = (
    "import torch\nfrom pkg.helpers import Kinematics\n\n\n"
    "def run():\n    k = Kinematics()\n    return k.forward(1)\n"
)


def _package(root: Path, marker: bool) -> Path:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (pkg / "model.py").write_text(MODEL, encoding="utf-8")
    if marker:
        (root / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    return pkg


@pytest.mark.parametrize("marker", [True, False])
def test_plain_class_with_forward_is_never_flagged_nor_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    pkg = _package(tmp_path, marker)
    assert lint("pkg") == []
    assert lint("pkg/model.py") == []
    assert main(["lint", "--fix", "pkg/model.py"]) == 0
    assert (pkg / "model.py").read_text(encoding="utf-8") == MODEL


def test_guess_in_a_file_without_torch_is_opt_in_and_never_fixed(tmp_path: Path) -> None:
    path = tmp_path / "drive.py"
    source = "def drive(model):\n    return model.forward(2)\n"
    path.write_text(source, encoding="utf-8")
    assert lint(path, config=False) == []
    (guess,) = lint(path, select=["HS104"], config=False)
    assert (guess.code, guess.confidence, guess.fixable, guess.edits) == (
        "HS104",
        "guess",
        False,
        (),
    )
    assert "never fixed" in guess.message and guess.resolution.startswith("guessed")
    assert main(["lint", "--no-config", "--select", "HS1,HS104", "--fix", str(path)]) == 1
    assert path.read_text(encoding="utf-8") == source


def test_resolved_finding_says_where_the_type_came_from(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "layers.py").write_text(
        "from torch import nn\n\n\nclass Block(nn.Module):\n    pass\n", encoding="utf-8"
    )
    (tmp_path / "model.py").write_text(
        "from torch import nn\nfrom layers import Block\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n\n"
        "    def forward(self, x):\n        return self.block.forward(x)\n",
        encoding="utf-8",
    )
    (finding,) = lint(tmp_path / "model.py")
    assert finding.code == "HS101" and finding.confidence == "resolved"
    assert "resolved: self.block = Block() at " in finding.message
    assert finding.resolution.endswith("model.py:8")


def _found(paths: list[Path]) -> set[tuple[str, int, str]]:
    return {(Path(f.path).name, f.line, f.code) for f in lint(paths)}


def test_single_file_runs_and_flake8_equal_the_whole_tree(tmp_path: Path) -> None:
    project = Path(__file__).resolve().parents[1] / "fixtures" / "lint" / "project"
    whole = _found([project])
    assert ("use.py", 16, "HS101") in whole  # a base class two files away
    assert set().union(*(_found([p]) for p in project.glob("*.py"))) == whole
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=HS", str(project)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    flake8 = set()
    for line in proc.stdout.splitlines():
        path, lineno, _col, rest = line.split(":", 3)
        flake8.add((Path(path).name, int(lineno), rest.split()[0]))
    assert flake8 == whole


def test_index_is_cached_and_invalidated_by_changes(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("", encoding="utf-8")
    base = tmp_path / "base.py"
    base.write_text("class Step:\n    pass\n", encoding="utf-8")
    use = tmp_path / "use.py"
    use.write_text(
        "import torch\nfrom base import Step\n\nstep = Step()\nstep.forward(1)\n", encoding="utf-8"
    )
    assert lint(use) == []
    cache = tmp_path / CACHE_DIR
    assert (cache / "lint-index.json").is_file()
    assert (cache / ".gitignore").read_text(encoding="utf-8").strip().endswith("*")
    base.write_text(
        "from torch import nn\n\n\nclass Step(nn.Module):\n    pass\n", encoding="utf-8"
    )
    stat = base.stat()
    os.utime(base, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # coarse clocks
    assert [f.code for f in lint(use)] == ["HS101"]
    (cache / "lint-index.json").write_text("{not json", encoding="utf-8")  # damaged: rebuilt
    assert [f.code for f in lint(use)] == ["HS101"]


def test_pytest_fixture_and_factory_of_another_file_resolve(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "nets.py").write_text(
        "from torch import nn\n\n\nclass Net(nn.Module):\n    pass\n\n\n"
        "class Plain:\n    def forward(self, x):\n        return x\n\n\n"
        "def build_net(size):\n    return Net()\n\n\n"
        "def build_plain() -> Plain:\n    return Plain()\n",
        encoding="utf-8",
    )
    (tmp_path / "conftest.py").write_text(
        "import pytest\nfrom nets import Plain\n\n\n@pytest.fixture\ndef plain():\n"
        "    return Plain()\n",
        encoding="utf-8",
    )
    test = tmp_path / "test_nets.py"
    test.write_text(
        "import pytest\nfrom nets import Net, build_net, build_plain\n\n\n"
        "@pytest.fixture\ndef net():\n    return Net()\n\n\n"
        "def test_a(net, plain):\n    net.forward(1)\n    plain.forward(1)\n\n\n"
        "def test_b():\n    build_net(3).forward(1)\n    build_plain().forward(1)\n",
        encoding="utf-8",
    )
    found = lint(test, select=["HS1", "HS104"])
    assert [(f.line, f.code) for f in found] == [(11, "HS101"), (16, "HS101")]


def test_class_hierarchies_through_aliased_imports_and_many_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    for pkg in ("a", "b", "c"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("", encoding="utf-8")
    # Two classes called Node: a module in a/nodes.py, a plain class in b/nodes.py.
    (tmp_path / "a" / "nodes.py").write_text(
        "from torch import nn\n\n\nclass Node(nn.Module):\n    pass\n", encoding="utf-8"
    )
    (tmp_path / "b" / "nodes.py").write_text(
        "class Node:\n    def forward(self, x):\n        return x\n", encoding="utf-8"
    )
    (tmp_path / "c" / "mid.py").write_text(
        "from a.nodes import Node as ModuleBase\nfrom b.nodes import Node as PlainBase\n\n\n"
        "class Layer(ModuleBase):\n    pass\n\n\nclass Step(PlainBase):\n    pass\n",
        encoding="utf-8",
    )
    use = tmp_path / "c" / "use.py"
    use.write_text(
        "import torch\nfrom c.mid import Layer, Step\n\n\n"
        "class Deep(Layer):\n    pass\n\n\nclass Task(Step):\n    pass\n\n\n"
        "Deep().forward(1)\nTask().forward(1)\n",
        encoding="utf-8",
    )
    assert [(f.line, f.code) for f in lint(use, select=["HS1", "HS104"])] == [(13, "HS101")]


def test_a_nested_project_is_linted_against_its_own_index(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "layers.py").write_text(
        "from torch import nn\n\n\nclass Block(nn.Module):\n    pass\n", encoding="utf-8"
    )
    use = "import torch\nfrom layers import Block\n\nBlock().forward(1)\n"
    (tmp_path / "top.py").write_text(use, encoding="utf-8")
    inner = tmp_path / "plugin"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'plugin'\n", encoding="utf-8")
    (inner / "use.py").write_text(use, encoding="utf-8")
    codes = ["HS1", "HS104"]
    whole = {(Path(f.path).name, f.line, f.code) for f in lint(tmp_path, select=codes)}
    # top.py sees layers.py; plugin/ is its own project, as when its file is linted alone.
    assert ("top.py", 4, "HS101") in whole
    alone = {(Path(f.path).name, f.line, f.code) for f in lint(inner / "use.py", select=codes)}
    assert alone == {("use.py", 4, "HS104")}
    assert {item for item in whole if item[0] == "use.py"} == alone


def test_relative_imports_name_their_package(tmp_path: Path) -> None:
    # Inside gpytorch itself, `from ..module import Module` is gpytorch's hookless
    # Module: its subclasses' .forward skips no torch hook (calling runs none either).
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'gpytorch'\n", encoding="utf-8")
    pkg = tmp_path / "gpytorch"
    (pkg / "kernels").mkdir(parents=True)
    (pkg / "__init__.py").touch()
    (pkg / "kernels" / "__init__.py").touch()
    (pkg / "module.py").write_text(
        "from torch import nn\n\n\nclass Module(nn.Module):\n    pass\n", encoding="utf-8"
    )
    (pkg / "kernels" / "kernel.py").write_text(
        "from ..module import Module\n\n\nclass Kernel(Module):\n"
        "    def run(self, x):\n        return self.forward(x)\n",
        encoding="utf-8",
    )
    (pkg / "kernels" / "use.py").write_text(
        "from .kernel import Kernel\n\n\ndef f(x):\n    return Kernel().forward(x)\n",
        encoding="utf-8",
    )
    assert lint(tmp_path, config=False) == []
    assert lint(pkg / "kernels" / "kernel.py", config=False) == []


def test_a_class_of_a_compiled_extension_is_not_the_same_named_python_class(
    tmp_path: Path,
) -> None:
    # pkg._C is a compiled extension (no pkg/_C.py): its Tok is not pkg/layers.py's Tok.
    pkg = _package(tmp_path, marker=True)
    layers = "from torch import nn\n\n\nclass Tok(nn.Module):\n    def forward(self, x):\n        return x\n"
    (pkg / "layers.py").write_text(layers, encoding="utf-8")
    use = (
        "from pkg._C import Tok\nfrom pkg.layers import Tok as PyTok\n\n\n"
        "def run(x):\n    PyTok().forward(x)\n    return Tok().forward(x)\n"
    )
    (pkg / "use.py").write_text(use, encoding="utf-8")
    for target in (tmp_path, pkg / "use.py"):
        found = lint([target], select=["HS101"], config=False)
        assert [(Path(f.path).name, f.line) for f in found] == [("use.py", 6)]
