"""Classes whose module base lives outside the scanned tree, and other receivers the
fresh6 set showed: library base classes by name, a class told a module by its own
body, same-file bases, class attributes through ``self.__class__`` (#15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, findings_of, found, write_source


def test_a_class_on_an_outside_base_is_a_module_by_its_body(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "wrappers.py",
        """\
        import torch
        from torch import nn
        from somesdk.layers import ExternalLayer, ExternalModel


        class Projected(ExternalLayer):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return self.proj(x)

            def run(self, x):
                return self.forward(x)  # HS102


        class Counted(ExternalModel):
            def size(self):
                return sum(p.numel() for p in self.parameters())

            def run(self, x):
                return self.forward(x)  # HS102


        class Runtime(ExternalModel):
            # an inference-runtime wrapper: a forward alone says nothing
            def __init__(self, path):
                super().__init__()
                self.request = open(path)

            def forward(self, x):
                return self.request.read()

            def generate(self, x):
                return self.forward(x)


        class Trainer(ExternalModel):
            # holds a loss, as trainers do; calls a module-only method name it defines itself
            def __init__(self):
                super().__init__()
                self.loss = nn.CrossEntropyLoss()

            def parameters(self):
                return []

            def step(self, x):
                self.parameters()
                return self.forward(x)

            @staticmethod
            def count(module):
                return len(list(module.parameters()))


        def use(x):
            Projected(4).forward(x)  # HS101
            return Runtime("m.xml").forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
    resolved = [f.resolution for f in findings_of(tmp_path, path)]
    assert any("a module by its body: self.proj = nn.Linear(...) at" in r for r in resolved)
    assert any("a module by its body: self.parameters(...) at" in r for r in resolved)


def test_a_body_in_another_file_tells_its_class_too(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "pkg/heads.py",
        """\
        import torch.nn as nn
        from detlib.models import HeadTemplate


        class Head(HeadTemplate):
            def __init__(self):
                super().__init__()
                self.register_buffer("anchors", None)


        class Plain(HeadTemplate):
            def __init__(self):
                super().__init__()
                self.name = "plain"
        """,
    )
    path = write_source(
        tmp_path,
        "pkg/use.py",
        """\
        from pkg.heads import Head, Plain


        def run(x):
            Plain().forward(x)
            return Head().forward(x)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_test_case_is_not_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "test_kernels.py",
        """\
        import unittest

        import torch
        from torch import nn


        class TestKernel(unittest.TestCase):
            def forward(self, layer, x):
                return layer(x)

            def test_one(self):
                self.register_buffer = None
                sum(p.numel() for p in self.parameters())
                return self.forward(nn.Linear(2, 2), torch.ones(2))


        class KernelCheck(nn.Module):
            def forward(self, x):
                return x

            def check(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_library_module_classes_by_name(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "models.py",
        """\
        import torch
        from fairseq.models import FairseqEncoderModel
        from fairseq.dataclass import FairseqDataclass
        from transformer_lens import HookedTransformer, HookedTransformerConfig
        from transformer_lens.components import Attention
        from torchvision.models import GoogLeNetOutputs, ResNet, ResNet50_Weights
        from torchvision.models.detection._utils import BoxCoder


        class DiffModel(FairseqEncoderModel):
            def forward(self, x):
                return x

            def sample(self, x):
                return self.forward(x)  # HS102


        class DiffConfig(FairseqDataclass):
            def forward(self, x):
                return x

            def sample(self, x):
                return self.forward(x)


        class Backbone(ResNet):
            def features(self, x):
                return self.forward(x)  # HS102


        def run(model: HookedTransformer, cfg: HookedTransformerConfig, attn: Attention, x):
            model.forward(x)  # HS101
            attn.forward(x)  # HS101
            cfg.forward(x)
            BoxCoder((1.0,)).forward(x)
            GoogLeNetOutputs(x, x, x).forward(x)
            return ResNet50_Weights.DEFAULT.forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_bare_base_is_the_one_its_own_file_defines(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "tf_side/wrapper.py",
        """\
        import tensorflow as tf


        class QuantWrapper(tf.keras.layers.Layer):
            pass


        class StaticWrapper(QuantWrapper):
            pass
        """,
    )
    write_source(
        tmp_path,
        "torch_side/wrapper.py",
        """\
        from torch import nn


        class QuantWrapper(nn.Module):
            pass


        class StaticWrapper(QuantWrapper):
            pass
        """,
    )
    path = write_source(
        tmp_path,
        "tests/test_wrappers.py",
        """\
        from torch_side.wrapper import StaticWrapper
        from tf_side.wrapper import StaticWrapper as KerasWrapper


        def test_wrappers(x):
            StaticWrapper().forward(x)  # HS101
            KerasWrapper().forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_a_model_cached_on_the_class(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "test_cached.py",
        """\
        import unittest

        from transformers import AutoTokenizer, MistralForCausalLM


        class CachedModelTest(unittest.TestCase):
            _model = None
            _tokenizer = None

            @property
            def model(self):
                if self.__class__._model is None:
                    self.__class__._model = MistralForCausalLM.from_pretrained("m")
                return self.__class__._model

            @property
            def tokenizer(self):
                if type(self)._tokenizer is None:
                    type(self)._tokenizer = AutoTokenizer.from_pretrained("m")
                return type(self)._tokenizer

            def test_logits(self):
                self.tokenizer.forward("text")
                return self.model.forward(None)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_locals_kept_as_attributes(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "backends.py",
        """\
        import cv2
        import torch
        from torch import nn


        class MultiBackend(nn.Module):
            def __init__(self, w):
                super().__init__()
                net = cv2.dnn.readNetFromONNX(w)
                self.__dict__.update(locals())

            def forward(self, im):
                self.net.setInput(im)
                return self.net.forward()


        class Unassigned(nn.Module):
            def forward(self, im):
                return self.net.forward(im)  # HS101
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_forward_reaches_only_methods_called_on_self(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "teacher.py",
        """\
        from torch import nn


        class Student(nn.Module):
            def __init__(self, teacher):
                super().__init__()
                self.teacher = teacher

            def forward(self, x):
                y = self.teacher.extract_features(x)
                return self.embed(x) + y

            def embed(self, x):
                return self.forward(x)

            def extract_features(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_classmethod_called_through_cls_gets_what_its_callers_pass(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "export.py",
        """\
        from torch.nn import Module


        class Exporter:
            @classmethod
            def _cache(cls, module, *args):
                return module.forward(*args)  # HS101

            @classmethod
            def _describe(cls, handler, *args):
                return handler.forward(*args)

            @classmethod
            def trace(cls, module: Module, args, handler):
                module = module.eval()
                cls._describe(handler, args)
                return cls._cache(module, args)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_a_base_attribute_used_as_a_module_by_a_sibling_class(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "train.py",
        """\
        class Epoch:
            def __init__(self, model, runner):
                self.model = model
                self.runner = runner


        class TrainEpoch(Epoch):
            def update(self, x):
                self.runner.forward(x)
                return self.model.forward(x)  # HS101


        class ValidEpoch(Epoch):
            def start(self):
                self.model.eval()


        class Other:
            def __init__(self, runner):
                self.runner = runner

            def start(self):
                self.runner.eval()
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_what_a_context_manager_method_yields(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "hooked.py",
        """\
        from contextlib import contextmanager

        from torch import nn


        class Hooked(nn.Module):
            @contextmanager
            def hooks(self, fwd_hooks):
                try:
                    yield self
                finally:
                    pass

            @contextmanager
            def recorder(self):
                yield Recorder()

            def run_with_hooks(self, x, fwd_hooks=()):
                with self.hooks(fwd_hooks) as hooked:
                    return hooked.forward(x)  # HS101

            def run_recorded(self, x):
                with self.recorder() as rec:
                    return rec.forward(x)


        class Recorder:
            def forward(self, x):
                return x


        def run_file(path, x):
            with open(path) as handle:
                return handle.forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_sparse_conv_layers(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "layers.py",
        """\
        import spconv.pytorch as spconv


        class Block(spconv.SparseModule):
            def run(self, x):
                return self.forward(x)  # HS102


        def run(x):
            spconv.SubMConv3d(4, 4, 3).forward(x)  # HS101
            return spconv.SparseConvTensor(x, x, [1], 1).forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


def test_only_torch_layers_tell_a_class_by_its_body(tmp_path: Path) -> None:
    write_source(
        tmp_path,
        "paddle_net.py",
        """\
        import paddle.nn as nn


        class PaddleNet(nn.Layer):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

            def size(self):
                return len(self.parameters())

            def run(self, x):
                return self.forward(x)
        """,
    )
    path = write_source(
        tmp_path,
        "torch_net.py",
        """\
        from torch.nn import Linear as Dense
        from somesdk import SdkLayer


        class TorchNet(SdkLayer):
            def __init__(self):
                super().__init__()
                self.fc = Dense(2, 2)

            def run(self, x):
                return self.forward(x)  # HS102
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
    assert not found(tmp_path, tmp_path / "paddle_net.py")


def test_the_training_flag_read_in_forward_tells_a_module(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "drop.py",
        """\
        import torch
        from somesdk import SdkLayer


        class Drop(SdkLayer):
            def forward(self, x):
                return torch.dropout(x, 0.1, self.training)

            def run(self, x):
                return self.forward(x)  # HS102


        class Agent(SdkLayer):
            def __init__(self):
                super().__init__()
                self.training = True

            def forward(self, x):
                return x if self.training else -x

            def act(self, x):
                return self.forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_timm_models_and_layers(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "vit.py",
        """\
        import timm.models.vision_transformer as vit
        from timm.layers import Format, Mlp
        from timm.models.byobnet import ByoModelCfg


        class MaskedViT(vit.VisionTransformer):
            def encode(self, x):
                return self.forward(x)  # HS102


        class Settings(ByoModelCfg):
            def forward(self, x):
                return x

            def run(self, x):
                return self.forward(x)


        def run(x):
            Mlp(4).forward(x)  # HS101
            return Format("NCHW").forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)


@pytest.mark.usefixtures("library_site")
def test_pyg_layers(tmp_path: Path) -> None:
    path = write_source(
        tmp_path,
        "gnn.py",
        """\
        from torch_geometric.nn import GCNConv, ToHeteroTransformer
        from torch_geometric.nn.pool.knn import KNNIndex


        class EdgeConv(GCNConv):
            def propagate_twice(self, x, edge_index):
                return self.forward(self.forward(x, edge_index), edge_index)  # HS102


        def run(x, edge_index, graph):
            GCNConv(4, 4).forward(x, edge_index)  # HS101
            ToHeteroTransformer(graph, None).forward(x)
            return KNNIndex(x).forward(x)
        """,
    )
    assert found(tmp_path, path) == expected_codes(path)
