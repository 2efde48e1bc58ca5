"""Selections that match nothing: an error (Monitor, capture) or a warning (session), never silence."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import HookscopeError, SelectionWarning, UsageError


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


NOTHING: list[Any] = ["nosuch.*", nn.LSTM, ["nosuch", nn.GRU], lambda name, module: False]


@pytest.mark.parametrize("modules", NOTHING)
def test_monitor_refuses_a_selection_that_matches_nothing(modules: Any) -> None:
    model = Net()
    with pytest.raises(UsageError, match="matches no module of Net; closest: ") as info:
        hookscope.Monitor(model, modules=modules).open()
    assert isinstance(info.value, HookscopeError)
    assert not model.head._forward_hooks and not model.head._forward_pre_hooks  # nothing left


@pytest.mark.parametrize("modules", NOTHING)
def test_capture_refuses_a_selection_that_matches_nothing(modules: Any) -> None:
    model = Net()
    with (
        pytest.raises(UsageError, match="matches no module of Net"),
        hookscope.capture(model, modules),
    ):
        model(torch.randn(2, 4))
    assert not model.head._forward_hooks


def test_the_message_names_the_closest_modules() -> None:
    with pytest.raises(UsageError, match=r"modules='encodr\.\*'.*closest: .*'encoder'"):
        hookscope.Monitor(Net(), modules="encodr.*").open()
    with pytest.raises(UsageError, match=r"modules=LSTM .*Linear \(first: 'encoder.0'\)"):
        hookscope.Monitor(Net(), modules=nn.LSTM).open()
    with (
        pytest.raises(UsageError, match=r"modules='haed' .*closest: 'head'"),
        hookscope.capture(Net(), "haed"),
    ):
        pass


def test_session_warns_for_a_selection_that_matches_nothing() -> None:
    model = Net()
    with hookscope.session(model) as s:
        with pytest.warns(SelectionWarning, match=r"modules='nosuch'.*no forward hook added") as w:
            group = s.add_forward_hook(lambda name, module, args, output: None, "nosuch")
        assert w[0].filename == __file__  # points at the caller's line
        assert len(group) == 0
        model(torch.randn(2, 4))


def test_selections_that_match_keep_working_without_a_warning() -> None:
    model = Net()
    with hookscope.Monitor(model, modules="encoder.*") as mon:
        model(torch.randn(2, 4))
        result = mon.step()
    assert result is not None and {r.module for r in result.records} == {"encoder.0", "encoder.1"}
    with hookscope.capture(model, nn.Linear) as acts:
        model(torch.randn(2, 4))
        assert set(acts) == {"encoder.0", "head"}
