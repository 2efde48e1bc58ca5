"""Scoped hooks: watch every leaf's output shape, survive a broken hook, leave no trace."""

from __future__ import annotations

import warnings

import torch
from torch import nn

import hookscope
from hookscope.zoo import SmallCNN

model = SmallCNN()
shapes: dict[str, tuple[int, ...]] = {}


def record_shape(name: str, module: nn.Module, args: tuple, output: torch.Tensor) -> None:
    shapes[name] = tuple(output.shape)


def broken(name: str, module: nn.Module, args: tuple, output: torch.Tensor) -> None:
    raise RuntimeError("a bug in my hook")


with hookscope.session(model, on_error="warn") as s:
    s.add_forward_hook(record_shape, leaves_only=True)
    s.add_forward_hook(broken, nn.Conv2d)
    s.add_grad_hook(lambda name, p: print(f"grad ready: {name}"), "head.*")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning is recorded in s.errors as well
        model(torch.randn(2, 3, 32, 32)).sum().backward()
    print("fired:", {name: sum(c.values()) for name, c in s.fired.items()})
    print("errors:", [(e.module, type(e.error).__name__) for e in s.errors])

print("shapes:", shapes)
print("hooks left:", len(hookscope.list_hooks(model)))

# A tool that watches every module: two process-wide hooks instead of one per module.
calls: list[str] = []
with hookscope.session(model) as s:
    s.add_model_hooks(
        lambda name, module, args: calls.append(name),
        lambda name, module, args, kwargs, output: None,  # kwargs is None if forward raised
    )
    model(torch.randn(2, 3, 32, 32))
print(f"model-wide hooks saw {len(calls)} module calls, first {calls[:3]}")
