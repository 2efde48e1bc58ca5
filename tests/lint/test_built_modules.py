"""Modules built or typed in ways the fresh5 set showed: compiled methods, ``getattr``
constructors, observers, ``from_pretrained``, fixtures, rewriters (#15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, found, write_source


def test_self_forward_in_a_script_method_is_the_required_form(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "scripted.py",
        """\
        import torch
        from torch import nn


        class Scripted(torch.jit.ScriptModule):
            @torch.jit.script_method
            def forward(self, x):
                return x

            @torch.jit.script_method
            def predict(self, x):
                return self.forward(x)


        class Eager(nn.Module):
            def forward(self, x):
                return x

            def predict(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_torch_nn_class_named_dynamically_builds_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "dynamic.py",
        """\
        import torch
        from torch import nn
        import helpers


        def norms(kind, x):
            plain = getattr(torch.nn.modules, kind)(4)
            act = getattr(nn, kind)()
            other = getattr(helpers, kind)(4)
            plain.forward(x)  # HS101
            act.forward(x)  # HS101
            return other.forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_torch_ao_observers_are_modules(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "observers.py",
        """\
        from torch.ao.quantization import HistogramObserver, UniformQuantizationObserverBase


        class RunningStats:
            def forward(self, x):
                return x


        class SmoothObserver(UniformQuantizationObserverBase):
            def observe(self, x):
                return self.forward(x)  # HS102


        def calibrate(x):
            HistogramObserver().forward(x)  # HS101
            return RunningStats().forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_fixture_that_yields_a_module_gives_the_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "test_yielded.py",
        """\
        import pytest
        from torch import nn


        @pytest.fixture
        def model():
            net = nn.Linear(2, 2)
            yield net


        @pytest.fixture
        def batches():
            yield [nn.Linear(2, 2)]


        def test_model(model, batches, x):
            batches.forward(x)
            return model.forward(x)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_an_auto_model_class_loads_a_model(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "test_auto.py",
        """\
        import pytest
        from mylib import AutoDistributedModelForCausalLM, AutoTokenizer


        class AutoModelCard:
            @classmethod
            def from_pretrained(cls, name):
                return cls()

            def forward(self, x):
                return x


        @pytest.fixture
        def model():
            return AutoDistributedModelForCausalLM.from_pretrained("name")


        def test_model(model, x):
            AutoTokenizer.from_pretrained("name").forward(x)
            AutoModelCard.from_pretrained("name").forward(x)
            return model.forward(x)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_the_self_of_a_rewriter_of_a_module_method_is_that_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "rewriters.py",
        """\
        from torch import nn
        from mmdeploy.core import FUNCTION_REWRITER


        class Head(nn.Module):
            def forward(self, x):
                return x


        class Coder:
            def forward(self, x):
                return x


        @FUNCTION_REWRITER.register_rewriter(
            func_name="mmseg.models.segmentors.EncoderDecoder.predict")
        def encoder_decoder__predict(self, x):
            return self.forward(x)  # HS101


        @FUNCTION_REWRITER.register_rewriter("project.heads.Head.predict")
        def head__predict(self, x):
            return self.forward(x)  # HS101


        @FUNCTION_REWRITER.register_rewriter("project.coders.Coder.decode")
        def coder__decode(self, x):
            return self.forward(x)


        @FUNCTION_REWRITER.register_rewriter("mmdet.models.task_modules.DeltaCoder.decode")
        def delta__decode(self, x):
            return self.forward(x)


        @FUNCTION_REWRITER.register_rewriter("mmocr.models.textdet.detectors.Wrapper.forward")
        def wrapper__forward(self, x):
            return self.wrapped.forward(x)  # HS101


        @FUNCTION_REWRITER.register_rewriter("mmocr.models.textdet.postprocessors.DBPost.run")
        def db__run(self, x):
            return self.forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_class_re_exported_by_a_package_is_the_one_defined_under_it(tmp_path: Path) -> None:
    write_source(tmp_path, "pkg/__init__.py", "")
    write_source(tmp_path, "pkg/torch_models/__init__.py", "from .s2v import Smiles2Vec\n")
    write_source(
        tmp_path,
        "pkg/torch_models/s2v.py",
        """\
        from torch import nn


        class Smiles2Vec(nn.Module):
            def forward(self, x):
                return x
        """,
    )
    write_source(
        tmp_path,
        "pkg/keras_models.py",
        """\
        from keras import KerasModel


        class Smiles2Vec(KerasModel):
            def forward(self, x):
                return x
        """,
    )
    path = write_source(
        tmp_path,
        "test_s2v.py",
        """\
        def test_torch(x):
            from pkg.torch_models import Smiles2Vec
            return Smiles2Vec().forward(x)  # HS101


        def test_keras(x):
            from pkg.keras_models import Smiles2Vec
            return Smiles2Vec().forward(x)


        def test_either(x):
            from pkg import Smiles2Vec
            return Smiles2Vec().forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_the_self_of_a_function_patched_onto_a_module_class(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "patched.py",
        """\
        from torch import nn


        class Wrapper(nn.Module):
            def __init__(self, layer):
                super().__init__()
                self.layer = layer


        class Plain:
            def __init__(self, layer):
                self.layer = layer


        def patch_wrapper():
            def _forward(self, x):
                return self.layer.forward(x)  # HS101

            Wrapper.forward = _forward


        def patch_plain():
            def _run(self, x):
                return self.layer.forward(x)

            Plain.run = _run


        def unpatched():
            def _forward(self, x):
                return self.layer.forward(x)

            return _forward
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_torch_names_are_not_looked_up_under_a_package(tmp_path: Path) -> None:
    write_source(tmp_path, "torch/__init__.py", "from . import nn\n")
    write_source(tmp_path, "torch/nn/__init__.py", "from .modules import Module\n")
    write_source(tmp_path, "torch/nn/modules/module.py", "class Module:\n    pass\n")
    write_source(tmp_path, "torch/jit/module.py", "class Module:\n    pass\n")
    path = write_source(
        tmp_path,
        "torch/nn/modules/net.py",
        """\
        from torch import nn


        class Net(nn.Module):
            def run(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
