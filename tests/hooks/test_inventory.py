"""list_hooks finds hooks from every origin, with names and source lines."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn
from torch.nn.utils import prune

import hookscope
from hookscope.zoo import SmallCNN
from tests.fixtures.models import Shared


def user_forward_hook(module: nn.Module, args: Any, output: Any) -> None:
    return None


def _line_of(fn: Any) -> str:
    return f"{inspect.getsourcefile(fn)}:{fn.__code__.co_firstlineno}"


def test_inventory_sees_hooks_from_every_origin() -> None:
    model = SmallCNN()
    handles = [
        model.head.register_forward_hook(user_forward_hook),
        model.features[0].register_forward_pre_hook(lambda m, a: None),
        model.features[4].register_full_backward_hook(lambda m, gi, go: None),
        model.head.weight.register_hook(lambda g: None),
        model.head.bias.register_post_accumulate_grad_hook(lambda p: None),
        model.register_state_dict_post_hook(lambda m, sd, prefix, local: None),
        nn.modules.module.register_module_forward_hook(user_forward_hook),
    ]
    try:
        inventory = hookscope.list_hooks(model)
        kinds = {(info.module, info.kind) for info in inventory}
        assert ("head", "forward") in kinds
        assert ("features.0", "forward_pre") in kinds
        assert ("features.4", "backward") in kinds
        assert ("head.weight", "tensor_grad") in kinds
        assert ("head.bias", "post_accumulate_grad") in kinds
        assert ("", "state_dict") in kinds
        assert ("*", "global_forward") in kinds
        head = next(i for i in inventory if i.kind == "forward" and i.module == "head")
        assert head.hook == "tests.hooks.test_inventory.user_forward_hook"
        assert head.source == _line_of(user_forward_hook)
        assert not head.by_hookscope
        assert all(isinstance(d["names"], list) for d in inventory.to_dicts())
    finally:
        for handle in handles:
            handle.remove()


def test_inventory_marks_hookscope_hooks_and_shows_the_user_callable() -> None:
    model = Shared()

    def watch(name: str, module: nn.Module, args: Any, output: Any) -> None:
        return None

    with hookscope.session(model) as s:
        s.add_forward_hook(watch, "a")
        (info,) = hookscope.list_hooks(model)
        assert info.by_hookscope and info.names == ("a", "b")
        assert info.hook.endswith(
            "test_inventory_marks_hookscope_hooks_and_shows_the_user_callable.<locals>.watch"
        )
        assert info.source == _line_of(watch)
        assert hookscope.list_hooks(model).by_module("b") == [info]
    assert hookscope.list_hooks(model) == []


def test_inventory_names_pruning_pre_hook() -> None:
    model = SmallCNN()
    prune.l1_unstructured(model.head, "weight", amount=0.5)
    inventory = hookscope.list_hooks(model)
    (info,) = inventory.by_module("head")
    assert info.kind == "forward_pre" and "L1Unstructured" in info.hook
    assert info.source is not None and "prune.py" in info.source
    torch.nn.utils.prune.remove(model.head, "weight")
