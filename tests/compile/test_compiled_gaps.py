"""Where hooks meet compiled code partly: disabled regions, sessions opened late, ``inputs=True``.

Tiny models only: every test compiles (slow on a shared 2-core CPU) and
starts from an empty dynamo cache.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch._dynamo as dynamo
from torch import nn

import hookscope
from hookscope.errors import HookWarning
from hookscope.hooks.compiled import StaleGraphWarning


class _Eager(nn.Module):
    """A block that always runs eagerly: ``torch.compiler.disable`` on its forward."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.Tanh()

    @torch.compiler.disable
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x))


class _Net(nn.Module):
    def __init__(self, disabled: bool = False) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 8)
        self.block: nn.Module = _Eager() if disabled else nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.out = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.block(self.inp(x)))


def _x() -> torch.Tensor:
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(3))


def _step(model: nn.Module, compiled: bool) -> tuple[dict[tuple[str, ...], float], dict[str, int]]:
    """One monitored training step of a copy; the records and how often each forward hook fired."""
    model = copy.deepcopy(model)
    with hookscope.Monitor(model) as mon, hookscope.session(model) as s:
        s.add_forward_hook(lambda name, module, args, output: None, leaves_only=True)
        run = torch.compile(model) if compiled else model
        run(_x()).square().mean().backward()
        result = mon.step()
        fired = {name: sum(counts.values()) for name, counts in s.fired.items()}
    assert result is not None and result.missing == ()
    values = {(r.phase, r.module, r.tensor, r.stat): r.value for r in result.records}
    return values, fired


# dynamo itself reads .grad of the eager block's output when it resumes after
# the disabled call (torch 2.13, with or without hookscope)
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_disabled_region_runs_its_hooks_eagerly_once() -> None:
    model = _Net(disabled=True)
    eager, eager_fired = _step(model, compiled=False)
    dynamo.reset()
    compiled, fired = _step(model, compiled=True)
    # every leaf, inside the disabled block or not, fired exactly once
    assert fired == eager_fired == {"inp": 1, "block.fc": 1, "block.act": 1, "out": 1}
    assert compiled.keys() == eager.keys()
    assert {("forward", "block.fc"), ("backward", "block.act"), ("param", "block.fc.weight")} <= {
        key[:2] for key in compiled
    }
    for key, value in eager.items():
        assert math.isclose(compiled[key], value, rel_tol=1e-4, abs_tol=1e-6), key


def test_session_opened_after_compile_warns_and_its_hooks_do_not_run() -> None:
    model = _Net()
    compiled = torch.compile(model)
    compiled(_x())
    seen: list[str] = []
    with hookscope.session(model) as s:
        with pytest.warns(StaleGraphWarning, match="hookscope.session added hooks to _Net"):
            s.add_forward_hook(lambda name, module, args, output: seen.append(name), "out")
        compiled(_x())
        assert seen == []  # the cached graph runs without the hook, as the warning said
        dynamo.reset()  # the fix the warning names
        compiled(_x())
        assert seen == ["out"]


def test_session_on_a_fresh_model_does_not_warn() -> None:
    model = _Net()
    seen: list[str] = []
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda name, module, args, output: seen.append(name), "out")
        torch.compile(model)(_x())
    assert seen == ["out"]


def test_inputs_under_compile_warn_and_are_named_missing() -> None:
    model = _Net()
    with hookscope.Monitor(model, inputs=True) as mon:
        torch.compile(model)(_x()).sum().backward()
        with pytest.warns(HookWarning, match=r"input statistics are eager-only"):
            compiled = mon.step()
        model(_x()).sum().backward()
        eager = mon.step()
    assert compiled is not None and eager is not None
    assert compiled.missing == ("inputs",)
    assert {r.tensor for r in compiled.records if r.phase == "forward"} == {"output"}
    assert eager.missing == ()
    assert {"input[0]", "output"} <= {r.tensor for r in eager.records if r.phase == "forward"}
