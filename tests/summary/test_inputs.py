"""Inputs: several, keyword, dict, integer tokens; options validated with the bad value."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import UsageError


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(5, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return (self.a(x) + self.b(y)) * scale


class DictInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.fc(batch["x"]) + batch["bias"]


class Tokens(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.fc = nn.Linear(4, 4)

    def forward(self, input_ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        out = self.fc(self.embed(input_ids))
        return out if mask is None else out * mask[..., None]


@pytest.mark.parametrize("device", [None, "cpu"])
def test_several_sizes_and_keyword_inputs(device: str | None) -> None:
    s = hookscope.summary(TwoInputs(), input_size=[(2, 4), (2, 5)], device=device, scale=2.0)
    assert s.input_shapes == ((2, 4), (2, 5))
    assert s.macs == 2 * 4 * 3 + 2 * 5 * 3
    s = hookscope.summary(TwoInputs(), torch.randn(2, 4), y=torch.randn(2, 5))
    assert s.input_shapes == ((2, 4), (2, 5))
    assert s.rows[0].input_shapes == ((2, 4), (2, 5))  # keyword inputs recorded too


def test_dict_input() -> None:
    s = hookscope.summary(DictInput(), {"x": torch.randn(3, 4), "bias": torch.zeros(2)})
    assert s.macs == 3 * 4 * 2
    assert s.rows[0].input_shapes == ((3, 4), (2,))


@pytest.mark.parametrize("device", [None, "cpu"])
def test_integer_token_inputs(device: str | None) -> None:
    s = hookscope.summary(Tokens(), input_size=(2, 7), dtypes=torch.long, device=device)
    assert s.macs == 2 * 7 * 4 * 4
    assert s.output_shapes == ((2, 7, 4),)
    s = hookscope.summary(
        Tokens(), input_size=[(2, 7), (2, 7)], dtypes=[torch.long, torch.float32], device=device
    )
    assert s.input_shapes == ((2, 7), (2, 7))


def test_to_dict_is_json_and_complete() -> None:
    s = hookscope.summary(TwoInputs(), input_size=[(2, 4), (2, 5)])
    data = json.loads(json.dumps(s.to_dict()))
    assert data["total_params"] == 15 + 18
    assert data["macs"] == s.macs and data["flops"] == 2 * s.macs
    assert data["rows"][1]["name"] == "a" and data["rows"][1]["input_shapes"] == [[2, 4]]
    assert data["device"] == "meta"
    assert json.loads(s.render("json")) == data


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"input_size": "1,3"}, "'1,3'"),
        ({"input_size": (1, -3)}, "(1, -3)"),
        ({"input_size": (1, 4), "dtypes": "float"}, "'float'"),
        ({"input_size": [(1, 4), (1, 5)], "dtypes": [torch.float] * 3}, "3 dtypes"),
        ({"input_size": (1, 4), "depth": -1}, "-1"),
        ({"input_size": (1, 4), "device": "nonsense"}, "'nonsense'"),
        ({}, "input_size"),
    ],
)
def test_bad_options_show_the_value(kwargs: dict[str, object], shown: str) -> None:
    with pytest.raises(UsageError) as info:
        hookscope.summary(nn.Linear(4, 2), **kwargs)  # type: ignore[arg-type]
    assert shown in str(info.value)


def test_bad_model_and_both_input_kinds() -> None:
    with pytest.raises(UsageError, match="list"):
        hookscope.summary([nn.Linear(4, 2)], input_size=(1, 4))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="not both"):
        hookscope.summary(nn.Linear(4, 2), torch.randn(1, 4), input_size=(1, 4))
    with pytest.raises(UsageError, match="'yaml'"):
        hookscope.summary(nn.Linear(4, 2), input_size=(1, 4)).render("yaml")  # type: ignore[arg-type]
