"""The first NaN/Inf: forward, backward, from the input, in a small CNN and in GPT-2."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hookscope import Monitor
from hookscope.monitor import NonFinite
from tests.monitor.models import NaNGrad, NaNOut, chain, train_step


def test_forward_nan_names_the_module_that_made_it() -> None:
    injector = NaNOut()
    model = chain(injector)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model) as mon:
        for step in range(3):
            injector.armed = step == 1
            if step == 2:
                break
            train_step(model, torch.randn(4, 8), opt)
            mon.step()
    assert mon.first_nonfinite == NonFinite(1, "forward", "2", "output")
    nonfinite = [a for a in mon.alerts if a.rule == "nonfinite"]
    assert nonfinite[0].step == 1
    # exact count: one NaN in the 4x16 output of the injector
    first = next(a for a in nonfinite if a.module == "2" and a.phase == "forward")
    assert first.value == 1.0


def test_nan_in_model_input_is_blamed_on_the_input() -> None:
    model = chain(nn.Identity())
    x = torch.randn(2, 8)
    x[1, 3] = math.nan
    with Monitor(model) as mon, torch.no_grad():
        model(x)
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "forward", "0", "input[0]")


def test_nan_from_a_functional_op_between_modules() -> None:
    class Between(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.log(self.a(x) * 0 - 1))  # log(-1) = NaN

    with Monitor(Between()) as mon, torch.no_grad():
        mon.model(torch.randn(2, 3))
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "forward", "b", "input[0]")


def test_backward_nan_names_the_module_whose_backward_made_it() -> None:
    model = chain(NaNGrad())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model) as mon:
        train_step(model, torch.randn(4, 8), opt)
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "backward", "2", "input[0]")
    grads = mon.to_pandas().query("phase == 'backward' and stat == 'nan_count'")
    counts = grads.set_index("module").value
    assert counts["3"] == 0  # after NaNGrad in the forward: its gradient came first, finite
    assert counts["1"] == 1  # tanh output gradient: exactly one NaN element


def test_small_cnn_nan_at_known_layer() -> None:
    from hookscope.zoo import SmallCNN

    model = SmallCNN()
    model.features[4] = nn.Sequential(model.features[4], NaNOut())
    model.features[4][1].armed = True
    with Monitor(model) as mon:
        model(torch.randn(2, 3, 32, 32)).sum().backward()
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "forward", "features.4.1", "output")


@pytest.fixture(scope="module")
def gpt2_config() -> object:
    transformers = pytest.importorskip("transformers")
    return transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=16, vocab_size=50, n_positions=16, use_cache=False
    )


def tiny_gpt2(config: object) -> nn.Module:
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(config).train()


def test_gpt2_forward_nan(gpt2_config: object) -> None:
    model = tiny_gpt2(gpt2_config)
    injector = NaNOut()
    model.transformer.h[1].mlp.act = injector
    injector.armed = True
    ids = torch.randint(0, 50, (2, 8))
    with Monitor(model) as mon:
        model(ids, labels=ids).loss.backward()
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "forward", "transformer.h.1.mlp.act", "output")


def test_gpt2_backward_nan(gpt2_config: object) -> None:
    model = tiny_gpt2(gpt2_config)
    act = model.transformer.h[0].mlp.act
    model.transformer.h[0].mlp.act = nn.Sequential(act, NaNGrad())
    ids = torch.randint(0, 50, (2, 8))
    with Monitor(model) as mon:
        model(ids, labels=ids).loss.backward()
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "backward", "transformer.h.0.mlp.act.1", "input[0]")
    forward = mon.to_pandas().query("phase == 'forward' and stat == 'nan_count'")
    assert (forward.value == 0).all()


def test_gpt2_model_output_paths(gpt2_config: object) -> None:
    model = tiny_gpt2(gpt2_config)
    with Monitor(model, modules=["", "transformer.h.0.attn"]) as mon, torch.no_grad():
        model(torch.randint(0, 50, (1, 5)))
        mon.step()
    tensors = set(mon.to_pandas().tensor)
    assert "output.logits" in tensors
    assert "output[0]" in tensors


def test_pass_through_module_is_not_blamed_in_backward() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Identity(), NaNGrad(), nn.Linear(4, 2))
    with Monitor(model) as mon:
        model(torch.randn(3, 4)).sum().backward()
        mon.step()
    # Identity returns its input object: the NaN gradient is NaNGrad's doing
    assert mon.first_nonfinite == NonFinite(0, "backward", "2", "input[0]")


class _LogInPlace(nn.Module):
    """Takes the log of its input in place: finite in, NaN out."""

    inplace = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.log_()


class _Between(nn.Module):
    def __init__(self, middle: nn.Module) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.middle = middle

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.middle(self.a(x) * 0 - 1)  # a functional op: input no module produced


def test_in_place_module_that_makes_a_nan_is_blamed_not_its_input() -> None:
    # The check of an input no module produced normally waits until an output
    # is non-finite; an in-place module has overwritten its input by then, so
    # that input is checked before the module runs.
    model = _Between(_LogInPlace())
    with Monitor(model) as mon, torch.no_grad():
        model(torch.randn(2, 3))
        mon.step()
    assert mon.first_nonfinite == NonFinite(0, "forward", "middle", "output")


def test_inputs_are_checked_only_when_an_output_is_not_finite() -> None:
    model = _Between(nn.Tanh())
    with Monitor(model) as mon, torch.no_grad():
        model(torch.randn(2, 3))
        collector = mon._collector
        assert collector is not None
        finite_step = [e.roles for e in collector.entries]
        mon.step()
        model.a.bias.data[0] = math.nan
        model(torch.randn(2, 3))
        nan_step = [e.roles for e in collector.entries]
        mon.step()
    assert finite_step == [[("a", "output", True)], [("middle", "output", True)]]
    # the input check sits where the pre-hook ran: before the module's output
    assert nan_step == [
        [("a", "input[0]", False)],
        [("a", "output", True)],
        [("middle", "input[0]", False)],
        [("middle", "output", True)],
    ]
    assert mon.first_nonfinite == NonFinite(1, "forward", "a", "output")


class _LogThen(nn.Module):
    scale = 1.0  # log(a(x) * 0 - scale): NaN for scale > 0

    def __init__(self, middle: nn.Module) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.middle = middle

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.middle(torch.log(self.a(x) * 0 - self.scale))


def test_in_place_relu_input_check_waits_and_still_blames_the_input() -> None:
    model = _LogThen(nn.ReLU(inplace=True))
    with Monitor(model) as mon, torch.no_grad():
        model.scale = -1.0  # log(1): finite
        model(torch.randn(2, 3))
        collector = mon._collector
        assert collector is not None
        assert all(shown for e in collector.entries for _, _, shown in e.roles)  # no checks
        mon.step()
        model.scale = 1.0  # log(-1): NaN made by a functional op, fed to an in-place ReLU
        model(torch.randn(2, 3))
        mon.step()
    assert mon.first_nonfinite == NonFinite(1, "forward", "middle", "input[0]")
