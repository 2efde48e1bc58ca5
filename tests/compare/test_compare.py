"""compare() on real models: planted faults, safety, matching, gradients."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import UsageError
from tests.compare.models import DropoutNet, gpt2_ids, gpt2_tiny, perturbed, resnet_tiny


def _image() -> torch.Tensor:
    return torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(3))


def test_planted_fault_in_a_cnn_is_the_isolate_culprit() -> None:
    model = resnet_tiny()
    faulty = perturbed(model, "layer2.0.conv2.weight")
    isolate = hookscope.compare(model, faulty, _image(), mode="isolate")
    propagate = hookscope.compare(model, faulty, _image())
    assert isolate.culprit is not None and isolate.culprit.name == "layer2.0.conv2"
    assert propagate.culprit is not None and propagate.culprit.name == "layer2.0.conv2"
    # Teacher forcing: a module after the fault, fed A's inputs, has no error of its own.
    assert isolate.row("layer3.0.conv1").max_abs == 0.0
    assert isolate.row("layer3.0.conv1").isolated
    assert propagate.row("layer3.0.conv1").exceeds
    # ... while propagate shows it spreading down to the logits.
    assert propagate.row("fc").exceeds and propagate.row("").exceeds
    assert not isolate.unmatched_a and not isolate.unmatched_b
    assert all(row.max_abs == 0.0 for row in isolate.rows[: isolate.culprit.index])


def test_planted_fault_in_gpt2_is_the_isolate_culprit() -> None:
    model = gpt2_tiny()
    faulty = perturbed(model, "transformer.h.1.mlp.c_fc.weight")
    cmp = hookscope.compare(model, faulty, gpt2_ids(), mode="isolate")
    assert cmp.culprit is not None
    assert cmp.culprit.name == "transformer.h.1.mlp.c_fc"
    assert cmp.culprit.type == "Conv1D"
    assert cmp.row("transformer.h.1.mlp.act").max_abs == 0.0
    assert cmp.row("lm_head").max_abs == 0.0
    text = str(cmp)
    assert text.splitlines()[3].startswith("culprit: transformer.h.1.mlp.c_fc")


def test_same_model_in_training_mode_matches_exactly_and_is_left_untouched() -> None:
    model = DropoutNet().train()
    x = torch.randn(6, 8)
    model.fc1.weight.grad = grad = torch.ones_like(model.fc1.weight)
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    rng = torch.random.get_rng_state()
    cmp = hookscope.compare(model, model, x, backward=True)
    # Dropout drew the same masks on both sides: nothing differs, gradients included.
    assert cmp.culprit is None
    assert all(row.max_abs == 0.0 for row in cmp.rows)
    assert any(t.kind == "grad" for row in cmp.rows for t in row.tensors)
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert all(torch.equal(v, dict(model.named_buffers())[k]) for k, v in buffers.items())
    assert model.training and model.bn.training
    assert model.fc1.weight.grad is grad and model.fc2.weight.grad is None
    assert not hookscope.list_hooks(model)
    # A module called twice is matched call by call.
    assert [r.label for r in cmp.rows if r.name == "act"] == ["act", "act#1"]


def test_no_grad_unless_backward() -> None:
    seen: list[bool] = []
    model = nn.Sequential(nn.Linear(3, 3))
    model.register_forward_hook(lambda m, a, o: seen.append(o.requires_grad))
    hookscope.compare(model, model, torch.randn(2, 3))
    assert seen == [False, False]


def test_gradients_show_a_planted_fault() -> None:
    model = DropoutNet().eval()
    faulty = perturbed(model, "fc2.weight")
    cmp = hookscope.compare(model, faulty, torch.randn(6, 8), backward=True)
    fc1 = cmp.row("fc1")
    kinds = {t.kind: t for t in fc1.tensors}
    assert kinds["output"].metrics is not None and kinds["output"].metrics.max_abs == 0.0
    assert kinds["grad"].metrics is not None and kinds["grad"].metrics.max_abs > 0.0
    assert cmp.culprit is not None and cmp.culprit.name == "fc1"  # its gradient differs


def test_dtype_device_and_transform_sides() -> None:
    model = resnet_tiny()
    x = _image()
    as_bf16 = hookscope.compare(model, torch.bfloat16, x)
    assert "bfloat16" in as_bf16.label_b and as_bf16.culprit is not None
    assert as_bf16.rows[0].tensors[0].dtype_b == "bfloat16"
    same = hookscope.compare(model, "cpu", x)
    assert same.culprit is None
    wrapped = hookscope.compare(model, lambda m: nn.DataParallel(m), x)
    assert wrapped.culprit is None and not wrapped.unmatched_b
    assert wrapped.row("layer1.0.conv1").max_abs == 0.0


def test_matching_by_order_and_by_mapping_lists_the_unmatched() -> None:
    a = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    b = nn.Sequential()
    b.add_module("proj", copy.deepcopy(a[0]))
    b.add_module("act", nn.ReLU())
    b.add_module("extra", nn.Identity())
    x = torch.randn(2, 4)
    by_name = hookscope.compare(a, b, x)
    assert set(by_name.unmatched_a) == {"0", "1"}
    assert set(by_name.unmatched_b) == {"proj", "act", "extra"}
    mapped = hookscope.compare(a, b, x, match={"proj": "0", "act": "1"})
    assert mapped.row("0").name_b == "proj" and mapped.row("0").max_abs == 0.0
    assert mapped.unmatched_b == ("extra",)
    by_order = hookscope.compare(a, b, x, match="order")
    assert [r.name for r in by_order.rows] == ["0", "1", ""]
    assert by_order.unmatched_b == ("extra",)


def test_bad_options_are_usage_errors() -> None:
    model = nn.Linear(2, 2)
    x = torch.randn(1, 2)
    with pytest.raises(UsageError, match="'sideways'"):
        hookscope.compare(model, model, x, mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="-1"):
        hookscope.compare(model, model, x, rtol=-1)
    with pytest.raises(UsageError, match="match must be"):
        hookscope.compare(model, model, x, match="random")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="model_b must be"):
        hookscope.compare(model, 3, x)
    with pytest.raises(UsageError, match="cuts B's autograd graph at every module"):
        hookscope.compare(model, model, x, mode="isolate", backward=True)
    with pytest.raises(UsageError, match="needs the model inputs"):
        hookscope.compare(model, model)
    with pytest.raises(hookscope.HookscopeError, match=r"raised RuntimeError"):
        hookscope.compare(model, model, torch.randn(1, 5))
