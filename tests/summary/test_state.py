"""The model comes back as it went in; failures name what ran; meta fallback."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import ForwardError, UsageError
from hookscope.zoo import SmallCNN
from tests.summary.test_params import SharedTwice, TiedLM


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()}


def _assert_same_state(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    after = model.state_dict(keep_vars=True)
    assert after.keys() == before.keys()
    for key, value in before.items():
        assert torch.equal(after[key], value), key


def _modes(model: nn.Module) -> list[bool]:
    return [m.training for m in model.modules()]


@pytest.mark.parametrize("device", [None, "meta", "cpu"])
def test_state_restored_after_success(device: str | None) -> None:
    model = SmallCNN()
    model.train()
    model.features[1].eval()  # a mixed state must come back exactly
    modes, before = _modes(model), _snapshot(model)
    params = [id(p) for p in model.parameters()]
    s = hookscope.summary(model, input_size=(2, 3, 32, 32), device=device)
    assert s.total_params == sum(p.numel() for p in model.parameters())
    assert _modes(model) == modes
    _assert_same_state(model, before)  # BatchNorm running stats untouched too
    assert [id(p) for p in model.parameters()] == params
    assert all(p.device.type == "cpu" for p in model.parameters())
    assert list(hookscope.list_hooks(model)) == []


def _identities(model: nn.Module) -> list[tuple[str, int]]:
    named = [
        *model.named_parameters(remove_duplicate=False),
        *model.named_buffers(remove_duplicate=False),
    ]
    return [(name, id(t)) for name, t in named]


@pytest.mark.parametrize("device", [None, "cpu"])
@pytest.mark.parametrize("factory", [SharedTwice, TiedLM])
def test_shared_modules_and_tied_weights_come_back(
    factory: type[nn.Module], device: str | None
) -> None:
    # A module reachable under two names is where functional_call-style swapping breaks.
    model = factory()
    identities, before = _identities(model), _snapshot(model)
    inputs = torch.ones(2, 6, dtype=torch.long) if factory is TiedLM else torch.randn(2, 6)
    hookscope.summary(model, inputs, device=device)
    assert _identities(model) == identities
    _assert_same_state(model, before)
    assert all(isinstance(p, nn.Parameter) and p.device.type == "cpu" for p in model.parameters())


class Exploding(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(4, 4)
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(4, 3), nn.Linear(4, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.stem(x))


@pytest.mark.parametrize("device", [None, "cpu"])
def test_forward_error_names_modules_and_restores(device: str | None) -> None:
    model = Exploding().train()
    before = _snapshot(model)
    with pytest.raises(ForwardError) as info:
        hookscope.summary(model, torch.randn(2, 4), device=device)
    message = str(info.value)
    assert "in body.2 (Linear)" in message
    assert "call chain: (root Exploding) > body > body.2" in message
    assert "modules that had run: stem, body.0, body.1" in message
    assert isinstance(info.value.__cause__, RuntimeError)
    assert all(m.training for m in model.modules())
    _assert_same_state(model, before)
    assert list(hookscope.list_hooks(model)) == []


class NeedsData(nn.Module):
    """Branches on a value: cannot run on meta tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return y * 2 if y.sum().item() > -1e9 else y


def test_meta_falls_back_to_real_run() -> None:
    model = NeedsData()
    s = hookscope.summary(model, input_size=(3, 4))
    assert s.device == "cpu"
    assert s.fallback_reason is not None and "meta" in s.fallback_reason
    assert s.macs == 3 * 4 * 4
    assert "meta run failed" in str(s)
    with pytest.raises(ForwardError, match="item"):
        hookscope.summary(model, input_size=(3, 4), device="meta")


def test_model_on_meta_runs_and_cannot_fall_back() -> None:
    with torch.device("meta"):
        model = NeedsData()
    with pytest.raises(ForwardError):
        hookscope.summary(model, input_size=(3, 4))
    with pytest.raises(UsageError, match="meta parameters"):
        hookscope.summary(model, input_size=(3, 4), device="cpu")
    with torch.device("meta"):
        fine = SmallCNN()
    assert hookscope.summary(fine, input_size=(1, 3, 32, 32)).device == "meta"


def test_summary_inside_user_session_keeps_user_hooks() -> None:
    model = SmallCNN()
    seen: list[str] = []
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda name, _m, _a, _o: seen.append(name), "head")
        hookscope.summary(model, input_size=(1, 3, 32, 32), device="cpu")
        assert seen == ["head"]
        assert len(hookscope.list_hooks(model)) == 1
    assert list(hookscope.list_hooks(model)) == []


class FullPrecisionBlock(nn.Module):
    """Keeps a block out of autocast the way timm's EfficientViT does."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, enabled=False):
            y = self.fc(x.float())
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            return self.fc(y)


def test_noop_autocast_on_the_meta_device_does_not_force_a_fallback() -> None:
    s = hookscope.summary(FullPrecisionBlock(), input_size=(3, 4))
    assert s.device == "meta" and s.fallback_reason is None
    assert s.macs == 2 * 3 * 4 * 4
    with torch.autocast("cpu", dtype=torch.bfloat16):  # other device types: untouched
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16


class KeepsNormFrozen(nn.Module):
    """Overrides ``train``: its norm layer stays in eval mode whatever the caller asks."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.norm = nn.Linear(4, 4), nn.BatchNorm1d(4)
        self.modes: list[bool] = []

    def train(self, mode: bool = True) -> KeepsNormFrozen:
        self.modes.append(mode)
        super().train(mode)
        self.norm.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert not self.training and not self.norm.training
        return self.norm(self.fc(x))


def test_a_model_that_overrides_train_goes_through_its_eval() -> None:
    model = KeepsNormFrozen().train()
    hookscope.summary(model, input_size=(2, 4))
    assert model.modes == [True, False]  # the summary called model.eval()
    assert (model.training, model.fc.training, model.norm.training) == (True, True, False)


def test_a_real_run_shows_the_layers_pytorch_would_fuse() -> None:
    # TransformerEncoderLayer takes a fused kernel in eval mode unless hooks are attached
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    names = {
        device: [
            r.name for r in hookscope.summary(layer, input_size=(2, 5, 16), device=device).rows
        ]
        for device in ("meta", "cpu")
    }
    assert names["cpu"] == names["meta"]
    assert {"self_attn", "linear1", "norm2"} <= set(names["cpu"])


def test_meta_stand_ins_are_reused_only_while_they_match() -> None:
    from hookscope.summary import swap

    model = nn.Linear(4, 2)
    meta = torch.device("meta")
    with swap.stand_ins(model, meta):
        first = model.weight
    with swap.stand_ins(model, meta):
        assert model.weight is first  # the same original: the same stand-in
    model.weight.requires_grad_(False)
    with swap.stand_ins(model, meta):
        assert model.weight is not first and not model.weight.requires_grad
    assert model.weight.device.type == "cpu"
    key = id(model.weight)
    del model
    assert key not in swap._META_STAND_INS  # let go with the original
