"""Library layers that are torch modules (#15): vLLM's ``CustomOp`` layers (``RotaryEmbedding(...)
.forward(...)`` skips hooks; ``SamplingParams`` and a linear layer's ``LinearMethodBase`` are
no modules) and torchvision's image transforms that are ``nn.Module``s (``Compose`` is not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.conftest import expected_codes, found, write_source

CONFIDENT = ("HS101", "HS102", "HS103")

_LAYERS = """\
    import torch
    from vllm import SamplingParams
    from vllm.model_executor.layers.layernorm import RMSNorm
    from vllm.model_executor.layers.linear import LinearMethodBase
    from vllm.model_executor.layers.rotary_embedding import RotaryEmbedding


    def run(positions, query, key, hidden):
        rope = RotaryEmbedding(64, 64, 2048, 10000, True, torch.float16)
        norm = RMSNorm(64)
        params = SamplingParams(temperature=0.0)
        method = LinearMethodBase()
        rope.forward(positions, query, key)  # HS101
        norm.forward(hidden)  # HS101
        return params.forward(hidden), method.forward(hidden)
    """


@pytest.mark.usefixtures("library_site")
def test_vllm_layers_are_modules_and_its_other_classes_are_not(tmp_path: Path) -> None:
    path = write_source(tmp_path, "rope.py", _LAYERS)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 2


_TRANSFORMS = """\
    import torchvision.transforms as T
    from torchvision.transforms import v2


    class Jitter(T.ColorJitter):
        def __call__(self, sample):
            return {"image": self.forward(sample["image"])}  # HS102


    class Tensors(T.ToTensor):
        def __call__(self, picture):
            return self.forward(picture)


    def augment(image, picture):
        flip = T.RandomHorizontalFlip()
        compose = T.Compose([T.ToTensor()])
        crop = v2.RandomCrop(32)
        flip.forward(image)  # HS101
        crop.forward(image)  # HS101
        return compose.forward(picture)
    """


@pytest.mark.usefixtures("library_site")
def test_torchvision_transforms_that_are_modules_and_those_that_are_not(tmp_path: Path) -> None:
    path = write_source(tmp_path, "augment.py", _TRANSFORMS)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 3
