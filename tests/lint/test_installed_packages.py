"""Classes of installed packages read from their sources (issue #33): a package on the
search path that defines an ``nn.Module`` subclass no table names is followed through its
own modules; without the package the class stays unresolved (an HS104 guess at most)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from hookscope.lint import lint
from hookscope.lint.engine.findings import Finding
from hookscope.lint.python.index.installed import Environment, search_path, torch_kind
from hookscope.lint.python.index.installed_cache import ModuleStore
from tests.lint.conftest import write_source

_PACKAGE = {
    "__init__.py": "from .layers import Fancy, Direct\nfrom ._impl import Plain\n",
    "_base.py": "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n",
    "layers.py": (
        "import torch.nn as nn\n\nfrom ._base import Base\n\n\n"
        "class Fancy(Base):\n    def forward(self, x):\n        return x\n\n\n"
        "class Direct(nn.Module):\n    def forward(self, x):\n        return x\n"
    ),
    "_impl.py": "class Plain(dict):\n    def forward(self, x):\n        return x\n",
}

_USER = """\
import torch
from tinypkg import Fancy, Plain
from tinypkg.layers import Direct


def run(x):
    net = Fancy()
    direct = Direct()
    p = Plain()
    return net.forward(x) + direct.forward(x) + p.forward(x)
"""


def _install(site: Path) -> None:
    package = site / "tinypkg"
    package.mkdir(parents=True)
    for name, text in _PACKAGE.items():
        (package / name).write_text(text, encoding="utf-8")


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'user'\n", encoding="utf-8")
    (project / "main.py").write_text(_USER, encoding="utf-8")
    return project


def _shown(findings: list[Finding]) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.resolution) for f in findings]


def test_a_module_class_of_an_installed_package_is_found_with_its_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    project = _project(tmp_path)
    found = _shown(lint(project, config=False, select=["HS1"]))
    assert found == [
        (10, "HS101", "installed package tinypkg: class Fancy(Base) <- class Base(nn.Module)"),
        (10, "HS101", "installed package tinypkg: class Direct(nn.Module)"),
    ]
    # ``Plain(dict)`` is read too: not a module, so not even a guess
    assert [f.code for f in lint(project, config=False, select=["HS1", "HS104"])] == ["HS101"] * 2


def test_without_the_package_nothing_is_invented(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert lint(project, config=False) == []
    guesses = _shown(lint(project, config=False, select=["HS1", "HS104"]))
    assert [(line, code) for line, code, _ in guesses] == [(10, "HS104")] * 3


def test_the_project_own_package_of_that_name_is_not_read_as_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path / "site")
    project = _project(tmp_path)
    (project / "tinypkg").mkdir()
    (project / "tinypkg" / "__init__.py").write_text(
        "class Fancy:\n    pass\n\n\nclass Direct:\n    pass\n\n\nclass Plain:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    found = _shown(lint(project, config=False, select=["HS1", "HS104"]))
    # the project's ``tinypkg`` has no ``layers``: ``Direct`` stays a guess, never read
    assert [(code, resolution) for _, code, resolution in found] == [
        ("HS104", "guessed: the file uses torch")
    ]


def test_environment_reads_only_what_a_lookup_needs(tmp_path: Path) -> None:
    _install(tmp_path / "site")
    (tmp_path / "site" / "tinypkg" / "unused.py").write_text("this is not python(\n")
    env = Environment(search_path("", [str(tmp_path / "site")]), torch_kind)
    fancy = env.installed_class("tinypkg", "Fancy")
    assert fancy is not None and fancy.kind == "module"
    plain = env.installed_class("tinypkg", "Plain")
    assert plain is not None and plain.kind == "other"
    assert env.installed_class("tinypkg", "Missing") is None
    assert env.installed_class("nosuchpkg", "Fancy") is None
    assert sorted(m for m, read in env._modules.items() if read) == [
        "tinypkg",
        "tinypkg._base",
        "tinypkg._impl",
        "tinypkg.layers",
    ]


@pytest.mark.slow
def test_the_cli_reads_the_environment_of_its_interpreter(tmp_path: Path) -> None:
    _install(tmp_path / "site")
    project = _project(tmp_path)
    command = [sys.executable, "-m", "hookscope", "lint", "--no-config", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    out = subprocess.run(
        [*command, str(project)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert [f["code"] for f in json.loads(out.stdout)] == ["HS101", "HS101"], out.stderr
    env.pop("PYTHONPATH")
    out = subprocess.run(
        [*command, str(project)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert json.loads(out.stdout) == [], out.stderr


_METRICS = """\
import torch
from torchmetrics import Accuracy
from torchmetrics.functional import accuracy


def score(preds, target):
    metric = Accuracy(task="binary")
    metric.forward(preds, target)
    return accuracy.forward(preds, target)
"""


@pytest.mark.skipif(find_spec("torchmetrics") is None, reason="torchmetrics is not installed")
def test_torchmetrics_classes_come_from_its_installed_sources(tmp_path: Path) -> None:
    write_source(tmp_path, "metrics.py", _METRICS)
    found = _shown(lint(tmp_path, config=False, select=["HS1"]))
    assert [(line, code) for line, code, _ in found] == [(8, "HS101")]
    assert found[0][2].startswith("installed package torchmetrics: class Accuracy(")
    assert found[0][2].endswith("<- class Metric(Module, ABC)")


def test_what_was_read_is_kept_with_the_project_cache_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path / "site")
    project = _project(tmp_path)
    paths = search_path(str(project), [str(tmp_path / "site")])
    first = Environment(paths, torch_kind, ModuleStore(str(project), paths))
    assert first.installed_class("tinypkg", "Fancy") is not None
    kept = json.loads((project / ".hookscope_cache" / "lint-installed.json").read_text())
    assert sorted(kept["modules"]) == ["tinypkg", "tinypkg._base", "tinypkg.layers"]
    # a second run answers from the record, without parsing: an unparsable copy is not read
    again = Environment(paths, torch_kind, ModuleStore(str(project), paths))
    assert again.store is not None and again.store.get("tinypkg._base") is not None
    base = tmp_path / "site" / "tinypkg" / "_base.py"
    base.write_text("class Base:\n    pass\n", encoding="utf-8")
    os.utime(base, ns=(1, 1))  # changed: the record of that file is stale
    third = Environment(paths, torch_kind, ModuleStore(str(project), paths))
    fancy = third.installed_class("tinypkg", "Fancy")
    assert fancy is not None and fancy.kind == "other"


def test_a_project_subclass_of_an_installed_module_class_is_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    source = (
        "from tinypkg import Fancy, Plain\n\n\n"
        "class Mine(Fancy):\n    pass\n\n\n"
        "class Table(Plain):\n    pass\n\n\n"
        "def run(x):\n    return Mine().forward(x) + Table().forward(x)\n"
    )
    (tmp_path / "project").mkdir()
    write_source(tmp_path / "project", "sub.py", source)
    found = lint(tmp_path / "project", config=False, select=["HS1", "HS104"])
    assert [(f.line, f.col, f.code) for f in found] == [(13, 12, "HS101")]


_FACTORIES = {
    "__init__.py": "from .build import *\n",
    "build.py": (
        "from typing import Optional\n\nimport torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\n"
        "def create(name) -> Net:\n    return Net()\n\n\n"
        "def wrap(net) -> 'torch.nn.Module | Net':\n    return net\n\n\n"
        "def maybe(name) -> Optional[Net]:\n    return None\n\n\n"
        "def config(name) -> dict:\n    return {}\n\n\n"
        "def unannotated(name):\n    return Net()\n"
    ),
}


def test_a_factory_of_an_installed_package_by_its_return_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "netzoo"
    package.mkdir(parents=True)
    for name, text in _FACTORIES.items():
        (package / name).write_text(text, encoding="utf-8")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    write_source(
        project,
        "main.py",
        """\
        import torch
        import netzoo
        from netzoo import create


        def run(x, m):
            create("a").forward(x)
            netzoo.wrap(m).forward(x)
            netzoo.maybe("a").forward(x)
            netzoo.config("a").forward(x)
            return netzoo.unannotated("a").forward(x)
        """,
    )
    without = _shown(lint(project, config=False, select=["HS1"]))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert without == []  # (``config`` gives a dict, ``unannotated`` cannot be told)
    net = " <- class Net(torch.nn.Module)"
    assert _shown(lint(project, config=False, select=["HS1"])) == [
        (7, "HS101", f"installed package netzoo: def create(...) -> Net{net}"),
        (8, "HS101", f"installed package netzoo: def wrap(...) -> torch.nn.Module | Net{net}"),
        (9, "HS101", f"installed package netzoo: def maybe(...) -> Net{net}"),
    ]
