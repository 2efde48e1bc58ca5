"""Tensors whose records are not plain statistics of their values say so.

A 0-element output has no statistics: its `TensorInfo` notes it (no warning:
empty tensors such as unused caches are common). A complex output is
summarised by its magnitude: its `TensorInfo` notes it and the Monitor warns once.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import HookscopeWarning
from hookscope.sinks import JsonlSink


class _Empty(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:0]


class _Complex(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.complex(x, -x)


def _infos(result: hookscope.monitor.StepResult) -> dict[str, hookscope.monitor.TensorInfo]:
    return {info.module: info for info in result.tensors}


def test_empty_output_is_noted_not_warned(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(4, 4), _Empty())
    path = tmp_path / "monitor.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error", HookscopeWarning)
        with hookscope.Monitor(model, grads=False, sinks=[JsonlSink(path)]) as mon:
            model(torch.randn(3, 4))
            result = mon.step()
    assert result is not None
    infos = _infos(result)
    assert infos["1"].shape == (0, 4) and infos["1"].note == "empty: no statistics"
    assert infos["0"].note == ""
    assert not [r for r in result.records if r.module == "1"]
    line = json.loads(path.read_text().splitlines()[0])
    noted = {t["module"]: t.get("note") for t in line["tensors"]}
    assert noted == {"0": None, "1": "empty: no statistics"}


def test_complex_output_is_noted_and_warned_once() -> None:
    model = nn.Sequential(nn.Linear(4, 4), _Complex())
    x = torch.randn(3, 4)
    with hookscope.Monitor(model, grads=False) as mon:
        model(x)
        with pytest.warns(HookscopeWarning, match=r"'1' is complex64: .* magnitude \|z\|"):
            result = mon.step()
        model(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error", HookscopeWarning)
            mon.step()  # said once
    assert result is not None
    assert _infos(result)["1"].note == "complex: statistics of |z|"
    values = {r.stat: r.value for r in result.records if r.module == "1"}
    with torch.no_grad():
        magnitude = model[0](x).abs().double() * 2**0.5
    assert values["mean"] == pytest.approx(float(magnitude.mean()), rel=1e-5)
    assert values["min"] == pytest.approx(float(magnitude.min()), rel=1e-5)
