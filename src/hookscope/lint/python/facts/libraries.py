"""The few facts about other libraries that reading their installed sources cannot give
(`index.installed` decides the rest): other frameworks' files, packages whose objects
are no torch modules (compiled ones among them), a module base whose ``__call__`` runs
no hooks, transformers' auto classes, builders looked up by a name known only at run time.
"""

from __future__ import annotations

import ast
import re

from hookscope.lint.python.facts.known import words

# Frameworks with layers of their own (``keras.layers.Layer``, flax's ``linen.Module``).
OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "tf_keras", "flax", "jax", "haiku", "mxnet"})
# Frameworks whose layers copy torch's ``Module`` API (``paddle.nn.Layer.eval()``,
# ``.parameters()``, ``.state_dict()``): a file of theirs shows nothing by those calls.
LOOKALIKE_FRAMEWORKS = frozenset({"paddle", "oneflow", "mindspore", "jittor", "megengine"})

# Libraries whose module base overrides ``__call__`` without running torch hooks
# (``gpytorch.Module.__call__`` calls ``self.forward`` itself; a body, not a base, shows
# it): a ``.forward`` call on their classes skips nothing that calling would run.
HOOKLESS_LIBRARIES = frozenset({"gpytorch"})

# Packages whose classes and functions give no torch module whatever their names: the
# Lua-torch port of torch < 1.0 (``torch.legacy.nn.Module`` is a plain class) and
# ``load_lua``; compiled extensions; other frameworks; OpenCV DNN nets, ONNX Runtime and
# OpenVINO sessions, MuJoCo simulators (``sim.forward()``) and their environments, sklearn.
NOT_MODULE_PACKAGES = (
    *words("torch.legacy torch.utils.serialization torchfile torch.utils.cpp_extension"),
    *sorted(OTHER_FRAMEWORKS),
    *words("paddle cv2 onnxruntime openvino mujoco_py mujoco gym gymnasium dm_control sklearn"),
)


def not_module_package(module: str) -> bool:
    """Whether ``module`` is (under) one of `NOT_MODULE_PACKAGES`."""
    return any(module == p or module.startswith(f"{p}.") for p in NOT_MODULE_PACKAGES)


# transformers' naming of auto classes that load a model (``AutoModelForCausalLM``), which
# projects follow for their own (``AutoDistributedModelForCausalLM.from_pretrained``): the
# classes are plain, only what their loaders return is a module.
_AUTO_MODEL = re.compile(r"^Auto\w*Model(?:For[A-Z]\w*|With[A-Z]\w*)?$")
AUTO_LOADERS = frozenset({"from_pretrained", "from_config"})

# Packages whose public lowercase functions build models, for a builder looked up at run
# time (``getattr(torchvision.models, arch)(...)``: no one annotation to read; a builder
# called by its name is read from the installed source, ``def resnet50(...) -> ResNet``).
MODEL_FUNCTION_PACKAGES = words(
    """
    torchvision.models torchvision.models.detection torchvision.models.segmentation
    torchvision.models.video torchvision.models.optical_flow torchvision.models.quantization
    torchaudio.models
    """
)
# Packages whose public classes are torch modules, so ``getattr(nn, name)(...)`` builds one.
MODULE_CLASS_PACKAGES = frozenset({"torch.nn", "torch.nn.modules"})


def auto_model_class(path: str, library: bool = False) -> bool:
    """Whether ``path`` names an auto class whose loaders give a torch model (with
    ``library``: one of transformers itself)."""
    if library and not path.startswith("transformers."):
        return False
    return bool(_AUTO_MODEL.match(path.rpartition(".")[2]))


def keras_file(tree: ast.Module, imports_torch: bool) -> bool:
    """A file that imports TensorFlow, Keras, JAX/Flax or MXNet and never names torch: its
    classes are that framework's layers and models, whatever a project-wide look-up of a
    base's name says."""
    return _imports_one_of(tree, imports_torch, OTHER_FRAMEWORKS)


def other_framework_file(tree: ast.Module, imports_torch: bool) -> bool:
    """A file that imports another deep-learning framework (`keras_file`, or one whose
    layers have torch's method names: PaddlePaddle, OneFlow, MindSpore, Jittor,
    MegEngine) and never names torch: a receiver's ``.eval()`` or ``.parameters()`` there
    is that framework's."""
    return _imports_one_of(tree, imports_torch, OTHER_FRAMEWORKS | LOOKALIKE_FRAMEWORKS)


def _imports_one_of(tree: ast.Module, imports_torch: bool, frameworks: frozenset[str]) -> bool:
    if imports_torch:
        return False
    for node in tree.body:
        if isinstance(node, ast.Import):
            tops = [alias.name.partition(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            tops = [(node.module or "").partition(".")[0]]
        else:
            continue
        if any(top in frameworks for top in tops):
            return True
    return False
