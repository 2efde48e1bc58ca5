"""Objects from libraries outside the tree (#15): what other libraries give is known not to
be a torch module (OpenCV and ONNX Runtime nets, compiled extensions, Lua-torch nets,
scikit-learn and skorch estimators, flax modules), so not even a guess is reported on
them, while the same shapes on real modules stay findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, found, write_source

ALL = ("HS101", "HS102", "HS103", "HS104")

_NETS = """\
import cv2
import gym
import onnxruntime as ort
import torch
from torch.utils import cpp_extension
from torch.utils.cpp_extension import load
from torch.utils.serialization import load_lua


def opencv(path, x):
    net = cv2.dnn.readNetFromONNX(path)
    return net.forward(x)


class Detector:
    def __init__(self, path):
        self.net = cv2.dnn.readNet(path)

    def detect(self, x):
        return self.net.forward(x)


ext = load(name="ext", sources=["ext.cpp"])
inline = cpp_extension.load_inline(name="inline", cpp_sources="")


def extensions(x):
    return ext.forward(x), inline.forward(x)


def onnx(x):
    session = ort.InferenceSession("model.onnx")
    return session.forward(x)


def lua(x):
    cache = load_lua("sketch.t7")
    model = cache.model
    return model.cuda().forward(x)


def physics(name):
    env = gym.make(name)
    return env.sim.forward()


def hub(x):
    model = torch.hub.load("repo", "resnet18")
    return model.forward(x)  # HS101
"""


def test_nets_of_other_libraries_are_not_modules(tmp_path: Path) -> None:
    path = write_source(tmp_path, "nets.py", _NETS)
    assert found(tmp_path, path, ALL) == expected_codes(path) == {(49, "HS101")}


_ESTIMATORS = """\
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from skorch import NeuralNetClassifier
from torch import nn


class Classifier(ClassifierMixin, BaseEstimator):
    def forward(self, x):
        return x

    def predict(self, x):
        return self.forward(x)


class Braindecoder(NeuralNetClassifier):
    def predict(self, x):
        return self.forward(x)


class Net(nn.Module):
    def forward(self, x):
        return x

    def predict(self, x):
        return self.forward(x)  # HS102


def run(x):
    model, clf, eeg = Net(), Classifier(), Braindecoder()
    return model.forward(x), clf.forward(x), eeg.forward(x)  # HS101


def held(x):
    eeg = NeuralNetClassifier(Net)
    return eeg.module_.forward(x)  # HS104
"""


@pytest.mark.usefixtures("library_site")
def test_estimators_are_not_modules(tmp_path: Path) -> None:
    path = write_source(tmp_path, "estimators.py", _ESTIMATORS)
    # (a skorch net's ``module_`` is its torch module: still guessed one)
    assert found(tmp_path, path, ALL) == expected_codes(path)
    assert expected_codes(path) == {(25, "HS102"), (30, "HS101"), (35, "HS104")}


_FLAX = """\
import jax
from flax import linen as nn


class Module(nn.Module):
    def forward(self, x):
        return x

    def __call__(self, x):
        return self.forward(x)

    def helper(self, x):
        return self.forward(x)
"""

_TORCH_NAMESAKE = """\
import torch
from torch import nn


class Module(nn.Module):
    def forward(self, x):
        return x

    def helper(self, x):
        return self.forward(x)  # HS102
"""


def test_flax_modules_are_not_torch_modules(tmp_path: Path) -> None:
    flax = write_source(tmp_path, "jax_edition.py", _FLAX)
    torch_file = write_source(tmp_path, "torch_edition.py", _TORCH_NAMESAKE)
    assert found(tmp_path, flax, ALL) == set()
    assert found(tmp_path, torch_file, ALL) == expected_codes(torch_file) == {(10, "HS102")}
