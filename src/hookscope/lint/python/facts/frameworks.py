"""Files of other deep-learning frameworks: their classes are that framework's layers,
and the torch-like calls made there (``layer.eval()``) are not torch's."""

from __future__ import annotations

import ast

# Frameworks with layers of their own (``keras.layers.Layer``, flax's ``linen.Module``).
OTHER_FRAMEWORKS = frozenset({"tensorflow", "keras", "tf_keras", "flax", "jax", "haiku", "mxnet"})


# Frameworks whose layers copy torch's ``Module`` API (``paddle.nn.Layer.eval()``,
# ``.parameters()``, ``.state_dict()``): a file of theirs shows nothing by those calls.
LOOKALIKE_FRAMEWORKS = frozenset({"paddle", "oneflow", "mindspore", "jittor", "megengine"})


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
