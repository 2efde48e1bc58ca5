"""Receivers resolved from the code around a call: other files, narrowing, use (#15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookscope.lint import lint
from hookscope.lint.engine.index import merge
from hookscope.lint.python.index.classes import scan_classes
from hookscope.lint.python.parse.pyfile import PyFile
from hookscope.lint.python.resolution.classes import ClassKinds
from hookscope.lint.python.resolution.kinds import Kind
from tests.lint.conftest import expected_codes


def test_context_resolution_finds_exactly_the_marked_calls(fixtures: Path) -> None:
    path = fixtures / "project" / "context.py"
    found = lint([fixtures / "project"], select=["HS1", "HS104"], config=False)
    assert {(f.line, f.code) for f in found if f.path.endswith("context.py")} == expected_codes(
        path
    )


def test_each_finding_says_what_its_resolution_rests_on(fixtures: Path) -> None:
    found = {f.line: f.resolution for f in lint(fixtures / "project" / "context.py")}
    lines = (fixtures / "project" / "context.py").read_text(encoding="utf-8").splitlines()

    def at(text: str) -> str:
        return found[next(i for i, line in enumerate(lines, 1) if text in line)]

    assert at("state.model.forward").startswith("model: nn.Module at ")  # State.__init__
    assert at("state.model.forward").endswith("state.py:10")
    assert at("m.forward(x)").startswith("isinstance(m, (nn.Linear, Layer)) at ")
    assert at("return model.forward(x)").startswith("model.eval(...) at ")
    assert at("self.inner.forward").startswith("a submodule: `self` is a module")
    assert at("make().forward").startswith("make() -> nn.Module at ")


@pytest.mark.usefixtures("library_site")
def test_receivers_known_from_the_calls_that_pass_them(fixtures: Path) -> None:
    path = fixtures / "project" / "passed.py"
    found = lint([fixtures / "project"], select=["HS1", "HS104"], config=False)
    assert {(f.line, f.code) for f in found if f.path.endswith("passed.py")} == expected_codes(path)
    by_line = {f.line: f.resolution for f in found if f.path.endswith("passed.py")}
    lines = path.read_text(encoding="utf-8").splitlines()
    at = {text: by_line[lines.index(text) + 1] for text in lines if text.strip().endswith("HS101")}
    assert at["    return net.forward(x)  # HS101"].startswith(
        "passed to eval_mode(nets: nn.Module) declared at "
    )
    assert at["    return model.forward(x)  # HS101"].startswith(
        "every call passes a module: check(Layer(), x) at "
    )
    built = at["    model.forward(x)  # HS101"]
    assert built.startswith("classmethod Built.build() at ") and "base.py:" in built


@pytest.mark.usefixtures("library_site")
def test_fixtures_constructors_container_families_and_own_hooks(fixtures: Path) -> None:
    path = fixtures / "project" / "families.py"
    found = lint([fixtures / "project"], select=["HS1", "HS104"], config=False)
    assert {(f.line, f.code) for f in found if f.path.endswith("families.py")} == expected_codes(
        path
    )


def test_class_kinds_do_not_depend_on_the_order_of_look_ups() -> None:
    # A's kind does not depend on B (nn.Module decides it), but B's depends on A: asking
    # for A first once left B cached as unknown (a cycle guard leaking into the cache).
    a = b"from ext import B\nfrom torch import nn\n\n\nclass A(B, nn.Module):\n    pass\n"
    b = b"from ext import A\n\n\nclass B(A):\n    pass\n"
    index = merge([*scan_classes(a, "pkg/a.py"), *scan_classes(b, "pkg/b.py")])

    def kinds(order: list[str]) -> dict[str, tuple[Kind, bool]]:
        resolver = ClassKinds(PyFile.parse("pkg/c.py", "import torch\n"), index)
        return {name: resolver.class_kind(name) for name in order}

    assert kinds(["A", "B"]) == kinds(["B", "A"]) == {n: (Kind.MODULE, False) for n in "AB"}


def test_registries_tuple_fixtures_and_handed_back_modules(fixtures: Path) -> None:
    path = fixtures / "project" / "registry.py"
    found = lint([fixtures / "project"], select=["HS1", "HS104"], config=False)
    mine = [f for f in found if f.path.endswith("registry.py")]
    assert {(f.line, f.code) for f in mine} == expected_codes(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    by_line = {f.line: f.resolution for f in mine}
    built = by_line[next(i for i, t in enumerate(lines, 1) if "MODELS.build(cfg)" in t)]
    assert built.startswith("built by registry MODELS: the 2 class(es) registered with ")
    item = by_line[next(i for i, t in enumerate(lines, 1) if "pair[0].forward" in t)]
    assert item.startswith("element 0 of what fixture pair() gives at ")
    # Every front end agrees on the new file (the registry scan reads the same project).
    alone = {(f.line, f.code) for f in lint([path], select=["HS1", "HS104"], config=False)}
    assert alone == {(f.line, f.code) for f in mine}


@pytest.mark.usefixtures("library_site")
def test_library_module_bases_count_only_from_their_library(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "nets.py").write_text(
        "import torch\nfrom mmengine.model import BaseModule\nfrom pydantic import BaseModel\n"
        "from mmdet.models.backbones import ResNet\nfrom mmdet.models import Widget\n\n\n"
        "class Net(BaseModule):\n    pass\n\n\nclass Settings(BaseModel):\n    pass\n\n\n"
        "def run(x):\n    Net().forward(x)\n    Settings().forward(x)\n"
        "    ResNet(depth=50).forward(x)\n    Widget().forward(x)\n",
        encoding="utf-8",
    )
    found = {(f.line, f.code) for f in lint(tmp_path, select=["HS1"], config=False)}
    # mmengine's BaseModule and mmdet's backbones are modules; pydantic's BaseModel is not,
    # and mmdet.models itself re-exports non-module helpers: not resolved there.
    assert found == {(17, "HS101"), (19, "HS101")}


def test_a_hub_mixin_alone_does_not_make_a_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "hub.py").write_text(
        "import torch\nfrom huggingface_hub import ModelHubMixin, PyTorchModelHubMixin\n\n\n"
        "class Wrapper(ModelHubMixin):\n    def named_modules(self):\n        return []\n\n\n"
        "class Net(torch.nn.Module, PyTorchModelHubMixin):\n    pass\n\n\n"
        "def compare(a, b, x):\n    a.named_modules()\n    b.named_modules()\n"
        "    a.forward(x)\n    return b.forward(x)\n\n\n"
        "def run(x):\n    compare(Wrapper(), Net(), x)\n",
        encoding="utf-8",
    )
    found = {(f.line, f.code) for f in lint(tmp_path, select=["HS1"], config=False)}
    assert found == {(18, "HS101")}  # b, a Net; a is a Wrapper whose named_modules proves nothing


def test_a_value_handed_to_a_module_only_wrapper_is_a_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "wrap.py").write_text(
        "import torch\nfrom torch.optim.swa_utils import AveragedModel\n\n\n"
        "def average(model, x):\n    ema = AveragedModel(model)\n    return model.forward(x)\n\n\n"
        "def plain(thing, x):\n    return thing.forward(x)\n",
        encoding="utf-8",
    )
    found = {(f.line, f.code) for f in lint(tmp_path, select=["HS1"], config=False)}
    assert found == {(7, "HS101")}


@pytest.mark.usefixtures("library_site")
def test_library_models_whose_names_say_so(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "lib.py").write_text(
        "import torch\nfrom diffusers import AutoencoderKL\n"
        "from transformers import CLIPVisionModelWithProjection, CLIPImageProcessor\n\n\n"
        "def run(x):\n    AutoencoderKL.from_pretrained('m').forward(x)\n"
        "    CLIPVisionModelWithProjection.from_pretrained('m').forward(x)\n"
        "    CLIPImageProcessor.from_pretrained('m').forward(x)\n",
        encoding="utf-8",
    )
    found = {(f.line, f.code) for f in lint(tmp_path, select=["HS1"], config=False)}
    assert found == {(7, "HS101"), (8, "HS101")}


def test_a_model_builder_named_at_run_time(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "zoo.py").write_text(
        "import torch\nimport torchvision.models as models\n\n\n"
        "def build(arch, x):\n    model = getattr(models, arch)(weights=None)\n"
        "    model.forward(x)\n    models.__dict__[arch]().forward(x)\n"
        "    getattr(models, 'list_models')().forward(x)\n",
        encoding="utf-8",
    )
    found = {(f.line, f.code) for f in lint(tmp_path, select=["HS1"], config=False)}
    assert found == {(7, "HS101"), (8, "HS101")}  # list_models() is no builder
