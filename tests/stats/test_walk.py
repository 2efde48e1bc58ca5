"""Finding tensors in nested outputs."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hookscope.stats import tensors_in


@dataclass
class Out:
    hidden: torch.Tensor
    extra: torch.Tensor | None = None


def test_paths_through_containers() -> None:
    a, b, c, d = (torch.zeros(1) for _ in range(4))
    obj = (a, [b, {"k": c}], Out(d), None, "text")
    paths = [path for path, _ in tensors_in(obj, "output")]
    assert paths == ["output[0]", "output[1][0]", "output[1][1]['k']", "output[2].hidden"]


def test_bare_tensor() -> None:
    t = torch.ones(2)
    assert tensors_in(t, "output") == [("output", t)]


def test_huggingface_model_output() -> None:
    from transformers.modeling_outputs import CausalLMOutput

    out = CausalLMOutput(logits=torch.zeros(2, 3), loss=torch.tensor(1.0))
    assert [p for p, _ in tensors_in(out, "output")] == ["output.loss", "output.logits"]
