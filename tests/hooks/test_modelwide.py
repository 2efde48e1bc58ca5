"""`HookSession.add_model_hooks`: one process-wide pair that sees every module of the model."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import HookError
from hookscope.hooks.bypass import BypassDetector
from hookscope.hooks.probe import ORIG_ATTR
from tests.fixtures.models import KwargsBlock, Raises, mlp


@pytest.mark.parametrize("detect_bypass", [False, True], ids=["global-hooks", "probes"])
def test_every_module_call_in_order_with_names_args_kwargs_and_output(detect_bypass: bool) -> None:
    model = nn.Sequential(KwargsBlock(), nn.ReLU())
    outsider = nn.Linear(4, 4)  # not in the model: never reported
    seen: list[tuple[Any, ...]] = []
    with hookscope.session(model, detect_bypass=detect_bypass) as s:
        # with a probe on every module, the probes run the pair: no global hook at all
        assert s.probes_every_module is detect_bypass
        s.add_model_hooks(
            lambda name, module, args: seen.append(("pre", name, type(module).__name__)),
            lambda name, _m, args, kwargs, out: seen.append(
                ("post", name, tuple(args[0].shape), kwargs, tuple(out.shape))
            ),
        )
        assert torch.nn.modules.module._has_any_global_hook() is not detect_bypass
        outsider(torch.randn(2, 4))
        model[0](model(torch.randn(2, 4)), scale=2.0)
        model[1].forward(torch.randn(2, 4))  # a bypass: no hook runs, whichever path
        fired = s.fired
    assert seen == [
        ("pre", "", "Sequential"),
        ("pre", "0", "KwargsBlock"),
        ("pre", "0.proj", "Linear"),
        ("post", "0.proj", (2, 4), {}, (2, 4)),
        ("post", "0", (2, 4), {}, (2, 4)),
        ("pre", "1", "ReLU"),
        ("post", "1", (2, 4), {}, (2, 4)),
        ("post", "", (2, 4), {}, (2, 4)),
        ("pre", "0", "KwargsBlock"),
        ("pre", "0.proj", "Linear"),
        ("post", "0.proj", (2, 4), {}, (2, 4)),
        ("post", "0", (2, 4), {"scale": 2.0}, (2, 4)),
    ]
    assert sorted(fired[""].values()) == [6, 6]  # the pre and the post hook, 6 calls each
    # removed on close: nothing global is left (torch.compile would warn about it)
    assert not torch.nn.modules.module._has_any_global_hook()


@pytest.mark.parametrize("detect_bypass", [False, True], ids=["global-hooks", "probes"])
def test_post_runs_when_the_forward_raised_with_the_error_at_hand(detect_bypass: bool) -> None:
    model = Raises()
    closed: list[tuple[str, Any, Any, str]] = []

    def post(name: str, _module: nn.Module, _args: Any, kwargs: Any, out: Any) -> None:
        closed.append((name, kwargs is None, out is None, repr(sys.exc_info()[1])))

    with hookscope.session(model, detect_bypass=detect_bypass) as s:
        s.add_model_hooks(lambda *_: None, post)
        with pytest.raises(RuntimeError, match="boom"):
            model(torch.randn(1, 3))
    assert closed == [
        ("first", False, False, "None"),
        ("", True, True, "RuntimeError('boom in forward')"),
    ]


def test_a_module_without_a_probe_keeps_the_global_hooks() -> None:
    model = mlp()
    model[1].forward = model[1].forward  # an instance forward: its class is not patched
    names: list[str] = []
    with hookscope.session(model, detect_bypass=True) as s:
        assert not s.probes_every_module
        s.add_model_hooks(lambda name, *_: names.append(name), lambda *_: None)
        model(torch.randn(1, 8))
    assert names == ["", "0", "1", "2"]


def test_probes_stop_running_the_pair_on_close() -> None:
    model = mlp()
    names: list[str] = []
    with hookscope.session(model, detect_bypass=True) as s:
        s.add_model_hooks(lambda name, *_: names.append(name), lambda *_: None)
        model(torch.randn(1, 8))
    model(torch.randn(1, 8))
    assert names == ["", "0", "1", "2"]
    assert not hasattr(nn.Linear.forward, ORIG_ATTR)  # unpatched, nothing left behind


@pytest.mark.parametrize("detect_bypass", [False, True], ids=["global-hooks", "probes"])
def test_a_raising_hook_follows_on_error(detect_bypass: bool) -> None:
    model = mlp()

    def bad(name: str, _module: nn.Module, _args: Any) -> None:
        if name == "1":
            raise ValueError("no")

    with (
        hookscope.session(model, detect_bypass=detect_bypass) as s,
        pytest.raises(HookError, match="no"),
    ):
        s.add_model_hooks(bad, lambda *_: None)
        model(torch.randn(1, 8))
    with hookscope.session(model, on_error="warn", detect_bypass=detect_bypass) as s:
        s.add_model_hooks(bad, lambda *_: None)
        with pytest.warns(hookscope.HookWarning):
            model(torch.randn(1, 8))
        assert len(s.errors) == 1


def test_a_container_without_forward_needs_no_probe() -> None:
    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4), nn.ReLU()])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = layer(x)
            return x

    model = Stack()
    names: list[str] = []
    with hookscope.session(model, detect_bypass=True) as s:
        assert s.probes_every_module  # the ModuleList is never called itself
        s.add_model_hooks(lambda name, *_: names.append(name), lambda *_: None)
        model(torch.randn(1, 4))
    assert names == ["", "layers.0", "layers.1"]


def test_a_tracking_detector_beside_the_probes_changes_no_call() -> None:
    # the doctor's detector counts every forward run; the pair still sees each call once
    model = nn.Sequential(KwargsBlock(), nn.ReLU())
    tracker = BypassDetector(model, track=True)
    tracker.attach()
    seen: list[str] = []
    try:
        with hookscope.session(model, detect_bypass=True) as s:
            assert s.probes_every_module
            s.add_model_hooks(
                lambda name, *_: seen.append(f"pre {name}"),
                lambda name, *_: seen.append(f"post {name}"),
            )
            model(torch.randn(2, 4))
    finally:
        tracker.detach()
    assert seen == [
        "pre ",
        "pre 0",
        "pre 0.proj",
        "post 0.proj",
        "post 0",
        "pre 1",
        "post 1",
        "post ",
    ]
    assert tracker.activity[id(model[0].proj)].calls == 1


def test_a_wrapper_put_on_a_probed_forward_still_runs_the_pair() -> None:
    class Block(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 1

    model = nn.Sequential(Block())
    names: list[str] = []
    with hookscope.session(model, detect_bypass=True) as s:
        s.add_model_hooks(lambda name, *_: names.append(name), lambda *_: None)
        probe = Block.forward

        def wrapper(self: Block, x: torch.Tensor) -> torch.Tensor:  # e.g. a profiler's
            return probe(self, x)

        Block.forward = wrapper  # type: ignore[method-assign]
        try:
            model(torch.zeros(1))
        finally:
            Block.forward = probe  # type: ignore[method-assign]
    assert names == ["", "0"]
