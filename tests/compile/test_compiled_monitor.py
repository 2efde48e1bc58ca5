"""Monitor and sessions on torch.compile'd models: same statistics as eager, no graph breaks.

Compiling is slow on a shared 2-core CPU, so there are few of these tests
and each model is tiny; every test starts from an empty dynamo cache.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch._dynamo as dynamo
from torch import nn

import hookscope
from hookscope.hooks.compiled import StaleGraphWarning
from hookscope.zoo import SmallCNN

transformers = pytest.importorskip("transformers")

Key = tuple[str, str, str, str]


def _gpt2() -> nn.Module:
    config = transformers.GPT2Config(
        n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=16,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def _cnn_loss(model: Callable[..., Any]) -> torch.Tensor:
    return (
        model(torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))).square().mean()
    )


def _gpt2_loss(model: Callable[..., Any]) -> torch.Tensor:
    ids = torch.randint(0, 50, (2, 8), generator=torch.Generator().manual_seed(1))
    return model(input_ids=ids).logits.square().mean()


def _monitored(model: nn.Module, loss: Callable[..., torch.Tensor], compiled: bool) -> Any:
    model = copy.deepcopy(model)
    with hookscope.Monitor(model) as mon:
        run = torch.compile(model) if compiled else model
        for _ in range(2):  # the second step runs the cached graph
            loss(run).backward()
            result = mon.step()
    assert result is not None
    return result


def _values(result: Any) -> dict[Key, float]:
    return {(r.phase, r.module, r.tensor, r.stat): r.value for r in result.records}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("build", "loss"), [(SmallCNN, _cnn_loss), (_gpt2, _gpt2_loss)], ids=["cnn", "gpt2"]
)
def test_compiled_statistics_equal_eager(build: Callable[[], nn.Module], loss: Any) -> None:
    model = build()
    eager = _values(_monitored(model, loss, compiled=False))
    dynamo.reset()
    result = _monitored(model, loss, compiled=True)
    compiled = _values(result)
    assert result.missing == ()
    assert compiled.keys() == eager.keys()
    assert {key[0] for key in compiled} == {"forward", "backward", "param"}
    for key, value in eager.items():
        # rtol 1e-4; values that are 0 in exact arithmetic (the mean of a
        # normalised tensor) differ by the compiled model's own float32 rounding
        assert math.isclose(compiled[key], value, rel_tol=1e-4, abs_tol=1e-6), key


class _Residual(nn.Module):
    """A block whose output is modified in place downstream (the probe must clone)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        y += x
        return self.act(y)


def test_fullgraph_with_monitor_and_session_hooks_same_graphs() -> None:
    model = _Residual()
    x = torch.randn(4, 8, requires_grad=True)
    plain = dynamo.explain(model)(x)
    dynamo.reset()
    seen: list[str] = []
    with hookscope.Monitor(model) as mon, hookscope.session(model) as s:
        s.add_forward_hook(lambda name, module, args, output: output * 2, "fc")
        # (a hook on the root module runs outside the model's forward frame,
        # so dynamo gives it a graph of its own, hookscope or not)
        s.add_forward_pre_hook(lambda name, module, args: seen.append(name), leaves_only=True)
        monitored = dynamo.explain(model)(x)
        dynamo.reset()
        compiled = torch.compile(model, fullgraph=True)
        out = compiled(x)
        out.sum().backward()
        result = mon.step()
        fired = s.fired
    assert (monitored.graph_count, monitored.graph_break_count) == (plain.graph_count, 0)
    expected = model.act(model.fc(x) * 2 + x)
    torch.testing.assert_close(out, expected)
    assert [n for label, n in fired["fc"].items() if label.startswith("forward:")] == [2]
    assert [n for label, n in fired["act"].items() if label.startswith("forward_pre:")] == [2]
    assert seen == ["fc", "act"] * 2  # explain ran it once, torch.compile once
    assert result is not None and result.missing == ()
    phases = {(r.phase, r.module) for r in result.records}
    assert {("forward", "fc"), ("backward", "fc"), ("param", "fc.weight")} <= phases


def test_monitor_after_compile_warns_and_names_missing_phases() -> None:
    model = SmallCNN()
    compiled = torch.compile(model)
    _cnn_loss(compiled).backward()
    with pytest.warns(StaleGraphWarning, match="Open the Monitor before the first compiled call"):
        mon = hookscope.Monitor(compiled).open()
    try:
        _cnn_loss(compiled).backward()
        with pytest.warns(StaleGraphWarning, match="no forward, backward statistics"):
            result = mon.step()
        _cnn_loss(compiled).backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = mon.step()  # warned once
    finally:
        mon.close()
    assert result is not None and again is not None
    assert result.missing == again.missing == ("forward", "backward")
    assert {r.phase for r in result.records} == {"param"}
    assert result.records[0].module == "features.0.weight"  # no "_orig_mod."


def test_identical_model_compiled_earlier_is_reported_at_the_step() -> None:
    other = SmallCNN()
    _cnn_loss(torch.compile(other)).backward()
    model = SmallCNN()
    with hookscope.Monitor(model) as mon:  # eager model: nothing to say yet
        compiled = torch.compile(model)
        _cnn_loss(compiled).backward()
        with pytest.warns(StaleGraphWarning, match=r"torch._dynamo.reset\(\)"):
            result = mon.step()
    assert result is not None and result.missing == ("forward", "backward")
