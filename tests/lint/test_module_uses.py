"""Receivers shown modules by their use (#15): ``x.apply(init_fn)``, library functions
that take a module (``torchsummary.summary(x, ...)``), ``torch.load(...)`` results moved to
a device, and module classes of libraries outside the tree; the same spellings on plain
objects, project functions of the same name and unloaded names are no evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, findings_of, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_USES = """\
import torch
from torchsummary import summary
from zoo import build


def init_weights(m):
    pass


def applied(cfg, x):
    net = build(cfg)
    net.apply(init_weights)
    return net.forward(x)  # HS101


def applied_lambda(cfg, x):
    net = build(cfg)
    net.apply(lambda m: None)
    return net.forward(x)  # HS101


def summarised(cfg, x):
    net = build(cfg)
    summary(net, (3, 224, 224))
    return net.forward(x)  # HS101


def exported(cfg, x):
    net = build(cfg)
    torch.onnx.export(net, x, "net.onnx")
    return net.forward(x)  # HS101


def loaded(path, x):
    net = torch.load(path)
    net.to("cuda")
    return net.forward(x)  # HS101
"""

_PLAIN_USES = """\
import torch
from zoo import build


def summary(obj, shape):
    return shape


def applied_to_values(cfg, table, x):
    frame = build(cfg)
    frame.apply(table)
    return frame.forward(x)


def summarised(cfg, x):
    net = build(cfg)
    summary(net, (3, 224, 224))
    return net.forward(x)


def moved(cfg, x):
    step = build(cfg)
    step.to("cuda")
    step.train()
    return step.forward(x)


def loaded_only(path, x):
    net = torch.load(path)
    return net.forward(x)
"""


def test_uses_that_show_a_module(tmp_path: Path) -> None:
    path = write_source(tmp_path, "uses.py", _USES)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 5


def test_the_same_spellings_on_plain_objects(tmp_path: Path) -> None:
    path = write_source(tmp_path, "plain_uses.py", _PLAIN_USES)
    assert found(tmp_path, path, CONFIDENT) == set()


_LIBRARY_CLASSES = """\
import segmentation_models_pytorch as smp
import torch
from einops.layers.torch import Rearrange
from torchvision.ops import MultiScaleRoIAlign


def run(x, feats, boxes, sizes):
    model = smp.Unet("resnet34")
    pooler = MultiScaleRoIAlign(["0"], 7, 2)
    flat = Rearrange("b c h w -> b (h w) c")
    return (
        model.forward(x),  # HS101
        pooler.forward(feats, boxes, sizes),  # HS101
        flat.forward(x),  # HS101
    )
"""

_PLAIN_LIBRARY_CLASSES = """\
import segmentation_models_pytorch as smp
import torch
from allennlp.models.archival import Archive


def run(model, loss, x):
    epoch = smp.utils.train.TrainEpoch(model, loss)
    archive = Archive(model, None)
    return epoch.forward(x), archive.forward(x)
"""

_LIBRARY_BASES = """\
import torch
from allennlp.models.model import Model
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor


class Tagger(Model):
    def tag(self, x):
        return self.forward(x)  # HS102


class Extractor(BaseFeaturesExtractor):
    def features(self, x):
        return self.forward(x)  # HS102


def predict(batches):
    models = [Tagger(), Tagger()]
    for batch, model in zip(batches, models):
        yield model.forward(batch)  # HS101
"""


@pytest.mark.usefixtures("library_site")
def test_module_classes_of_libraries(tmp_path: Path) -> None:
    path = write_source(tmp_path, "library_classes.py", _LIBRARY_CLASSES)
    plain = write_source(tmp_path, "plain_library_classes.py", _PLAIN_LIBRARY_CLASSES)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 3
    assert found(tmp_path, plain, CONFIDENT) == set()


@pytest.mark.usefixtures("library_site")
def test_module_bases_of_libraries(tmp_path: Path) -> None:
    path = write_source(tmp_path, "library_bases.py", _LIBRARY_BASES)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 3


_CASTS = """\
from typing import cast

import torch
from torch import nn


class Step:
    def forward(self, x):
        return x


def typed(m, x):
    model = cast(nn.Module, m)
    step = cast(Step, m)
    return model.forward(x), step.forward(x)  # HS101
"""


def test_typing_cast_gives_its_type(tmp_path: Path) -> None:
    path = write_source(tmp_path, "casts.py", _CASTS)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path) == {(15, "HS101")}
    # the finding is on ``model.forward``, not on the plain ``step.forward`` after it
    assert [f.col for f in findings_of(tmp_path, path, CONFIDENT)] == [12]
