"""`walk` lists exactly what ``named_modules`` yields, in the same order."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from torch import nn

from hookscope.modtree import aliases, walk, walked
from hookscope.zoo import resnet50_like


def shared_model() -> nn.Module:
    block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model = nn.Sequential(block, nn.ModuleList([block, nn.Linear(4, 4)]), nn.ModuleDict())
    model.add_module("empty", None)
    model[2]["inner"] = nn.Sequential(nn.Identity(), block[0])
    return model


@pytest.mark.parametrize("make", [shared_model, resnet50_like])
@pytest.mark.parametrize("remove_duplicate", [True, False])
def test_walk_equals_named_modules(make: Callable[[], nn.Module], remove_duplicate: bool) -> None:
    model = make()
    expected = list(model.named_modules(remove_duplicate=remove_duplicate))
    got = walk(model, remove_duplicate=remove_duplicate)
    assert [name for name, _ in got] == [name for name, _ in expected]
    assert all(a is b for (_, a), (_, b) in zip(got, expected, strict=True))


def test_walked_reuses_one_walk_and_lets_go_after() -> None:
    model = shared_model()
    with walked(model):
        first = walk(model)
        model.add_module("late", nn.Linear(2, 2))
        assert walk(model) is first  # held: the tree is taken as it was
    assert [name for name, _ in walk(model)][-1] == "late"
    assert walk(model) is not walk(model)


def test_aliases_list_every_name_of_a_shared_module() -> None:
    model = shared_model()
    block = model[0]
    names = aliases(model)
    assert names[id(block)] == ("0", "1.0")
    assert names[id(block[0])] == ("0.0", "1.0.0", "2.inner.1")
    with walked(model):
        assert aliases(model) is aliases(model)
        assert walk(model) != walk(model, remove_duplicate=False)  # shared: two walks
