"""Layers of vLLM whose every public class is a ``CustomOp`` (an ``nn.Module``) (#15):
``RotaryEmbedding(...).forward(...)`` skips hooks; vLLM's other classes (``SamplingParams``,
a linear layer's quantization ``LinearMethodBase``) are not shown modules by the package."""

from __future__ import annotations

from pathlib import Path

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


def test_vllm_layers_are_modules_and_its_other_classes_are_not(tmp_path: Path) -> None:
    path = write_source(tmp_path, "rope.py", _LAYERS)
    assert found(tmp_path, path, CONFIDENT) == expected_codes(path)
    assert len(expected_codes(path)) == 2
