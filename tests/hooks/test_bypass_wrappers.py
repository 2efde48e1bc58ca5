"""Forward wrappers that run inside the module's own call are not bypasses; planted calls still are.

The wrappers here do what transformers' ``GradientCheckpointingLayer.__init_subclass__``
and accelerate's mixed-precision forward wrappers do; the real libraries are
exercised in ``tests/integrations/test_run_doctor.py``.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from hookscope.hooks.bypass import BypassDetector


def _wrap(forward: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(forward)
    def wrapped(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "checkpointed", False) and torch.is_grad_enabled():
            return checkpoint(functools.partial(forward, self), *args, use_reentrant=False)
        return forward(self, *args, **kwargs)

    return wrapped


@pytest.fixture
def watch_all() -> Iterator[BypassDetector]:
    """What ``hookscope run --doctor`` does: watch every class, also those defined later."""
    detector = BypassDetector(None)
    detector.attach_all()
    try:
        yield detector
    finally:
        detector.detach()


def _layer_classes() -> tuple[type[nn.Module], type[nn.Module]]:
    class WrappingLayer(nn.Module):
        """Wraps the forward of every subclass, like ``GradientCheckpointingLayer``."""

        def __init_subclass__(cls, **kwargs: Any) -> None:
            super().__init_subclass__(**kwargs)
            cls.forward = _wrap(cls.forward)  # type: ignore[method-assign]

    class Block(WrappingLayer):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.fc(x))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return x

    return Block, Net


def test_init_subclass_forward_wrapper_is_not_a_bypass(watch_all: BypassDetector) -> None:
    _block, net_class = _layer_classes()  # defined while watched, as a script's imports are
    net = net_class()
    fired = []
    net.blocks[0].register_forward_hook(lambda m, a, o: fired.append(1))
    net(torch.ones(2, 4)).sum().backward()
    assert fired == [1]
    assert watch_all.records == []


def test_checkpointed_wrapper_and_its_recompute_are_not_bypasses(
    watch_all: BypassDetector,
) -> None:
    _block, net_class = _layer_classes()
    net = net_class()
    for block in net.blocks:
        block.checkpointed = True  # type: ignore[assignment]
    x = torch.ones(2, 4, requires_grad=True)
    net(x).sum().backward()
    assert x.grad is not None
    assert watch_all.records == []


def test_planted_forward_through_the_wrapper_is_reported_at_the_callers_line(
    watch_all: BypassDetector,
) -> None:
    _block, net_class = _layer_classes()
    net = net_class()
    line = sys._getframe().f_lineno + 1
    net.blocks[1].forward(torch.ones(2, 4))  # noqa: HS101
    [record] = watch_all.records
    assert record.module_type == "Block"
    assert record.call_site == f"{__file__}:{line}"  # not the wrapper's line


def test_planted_forward_inside_a_parent_is_reported(watch_all: BypassDetector) -> None:
    block_class, _net = _layer_classes()

    class Parent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = block_class()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.block.forward(x)  # noqa: HS101

    Parent()(torch.ones(1, 4))
    assert [(r.module, r.module_type) for r in watch_all.records] == [("block", "Block")]


def test_instance_forward_wrapper_like_accelerate_autocast_is_not_a_bypass(
    watch_all: BypassDetector,
) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    layer = model[0]
    # accelerate: model.forward = MethodType(convert_outputs(autocast(forward.__func__)), model)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)(type(layer).forward)

    class ConvertOutputs:
        def __init__(self, forward: Callable[..., Any]) -> None:
            self.forward = forward

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return self.forward(*args, **kwargs).float()

    layer.forward = types.MethodType(ConvertOutputs(autocast), layer)  # type: ignore[method-assign]
    out = model(torch.ones(2, 4))
    assert out.dtype == torch.float32
    assert watch_all.records == []
    layer.forward(torch.ones(2, 4))  # noqa: HS101 - planted, through the wrapper
    assert [r.module_type for r in watch_all.records] == ["Linear"]
