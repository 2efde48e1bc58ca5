"""Records, gradient flow, activation-statistics plots and histograms."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from hookscope.errors import MissingExtraError, UsageError
from hookscope.viz import activation_histogram, activation_stats_plot, gradient_flow_plot
from hookscope.viz.records import as_rows, gradient_flow, gradient_phase, stat_series
from tests.viz.images import assert_not_blank, load_rgb
from tests.viz.runs import train_records


def _rec(step: int, phase: str, module: str, tensor: str, stat: str, value: Any) -> dict[str, Any]:
    return {
        "step": step,
        "phase": phase,
        "module": module,
        "tensor": tensor,
        "stat": stat,
        "value": value,
    }


def _flat(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "step": e["step"]} for e in entries for r in e["records"]]


def test_gradient_flow_combines_tensors_per_step_hand_computed() -> None:
    rows = as_rows(
        [
            _rec(0, "param", "a", "weight", "norm", 3.0),
            _rec(0, "param", "a", "bias", "norm", 4.0),  # step 0: sqrt(9 + 16) = 5
            _rec(1, "param", "a", "weight", "norm", 6.0),
            _rec(1, "param", "a", "bias", "norm", 8.0),  # step 1: sqrt(36 + 64) = 10
            _rec(0, "param", "b", "weight", "norm", "nan"),  # non-finite: left out
            _rec(1, "param", "b", "weight", "norm", 2.0),
            _rec(0, "backward", "a", "grad_output", "norm", 99.0),  # other phase
        ]
    )
    layers = gradient_flow(rows)
    assert [(g.module, g.mean, g.max, g.steps) for g in layers] == [
        ("a", 7.5, 10.0, 2),
        ("b", 2.0, 2.0, 1),
    ]
    assert gradient_phase(rows) == "param"
    assert gradient_flow(rows, phase="backward")[0].max == 99.0


def test_gradient_flow_is_in_forward_order() -> None:
    # Parameter gradients arrive output-first and are named after the parameter.
    rows = as_rows(
        [
            _rec(0, "param", "head.weight", "grad", "norm", 1.0),
            _rec(0, "param", "body.1.weight", "grad", "norm", 2.0),
            _rec(0, "param", "body.0.bias", "grad", "norm", 3.0),
            _rec(0, "forward", "body.0", "output", "mean", 0.0),
            _rec(0, "forward", "body.1", "output", "mean", 0.0),
            _rec(0, "forward", "head", "output", "mean", 0.0),
        ]
    )
    assert [g.module for g in gradient_flow(rows)] == [
        "body.0.bias",
        "body.1.weight",
        "head.weight",
    ]


def test_as_rows_reads_nonfinite_strings_and_dataframes() -> None:
    records = [
        _rec(0, "forward", "x", "output", "max", "inf"),
        _rec(0, "forward", "x", "output", "min", "-inf"),
    ]
    frame = pd.DataFrame(records)
    rows = as_rows(frame)
    assert [r["value"] for r in rows] == [math.inf, -math.inf]
    with pytest.raises(UsageError, match="not a monitor record"):
        as_rows([{"step": 0}])
    with pytest.raises(UsageError, match="str"):
        as_rows("monitor.jsonl")


def test_stat_series_labels_modules_with_several_tensors() -> None:
    rows = as_rows(
        [
            _rec(1, "forward", "a", "output", "mean", 2.0),
            _rec(0, "forward", "a", "output", "mean", 1.0),
            _rec(0, "forward", "b", "output", "mean", 5.0),
            _rec(0, "forward", "b", "input", "mean", 6.0),
        ]
    )
    assert stat_series(rows, "mean") == {
        "a": [(0, 1.0), (1, 2.0)],
        "b:output": [(0, 5.0)],
        "b:input": [(0, 6.0)],
    }


def test_gradient_flow_plot_from_real_training(tmp_path: Path) -> None:
    rows = _flat(train_records(3))
    fig = gradient_flow_plot(rows, vanishing=1e-6, exploding=1e2)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["features.0", "features.1", "features.4", "features.5", "head"]
    horizontal = sorted(line.get_ydata()[0] for line in ax.lines if len(set(line.get_ydata())) == 1)
    assert horizontal == [1e-6, 1e2]
    # Bar heights are the max over steps of sqrt(weight^2 + bias^2) norms, per layer.
    heights = [bar.get_height() for bar in ax.patches]
    assert heights == pytest.approx([g.max for g in gradient_flow(as_rows(rows))])
    fig.savefig(tmp_path / "g.png")
    assert_not_blank(load_rgb(tmp_path / "g.png"))


def test_gradient_flow_plot_needs_gradients_and_sane_thresholds() -> None:
    forward_only = [_rec(0, "forward", "a", "output", "mean", 1.0)]
    with pytest.raises(UsageError, match="no gradient norms"):
        gradient_flow_plot(forward_only)
    with pytest.raises(UsageError, match="10.0"):
        gradient_flow_plot(forward_only, vanishing=10.0, exploding=1.0)


def test_activation_stats_plot_panels_and_lines(tmp_path: Path) -> None:
    rows = _flat(train_records(3))
    fig = activation_stats_plot(
        rows, stats=("mean", "zero_frac"), modules=["features.0", "features.2"]
    )
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["mean", "zero_frac"]
    assert [line.get_label() for line in panels[1].lines] == ["features.0", "features.2"]
    # ReLU output (features.2) has zeros; conv output (features.0) has none.
    relu_zero_frac = panels[1].lines[1].get_ydata()
    assert all(0.2 < v < 0.8 for v in relu_zero_frac)
    assert list(panels[1].lines[0].get_xdata()) == [0, 1, 2]
    colours = [{line.get_label(): line.get_color() for line in ax.lines} for ax in panels]
    assert colours[0] == colours[1]  # a layer has one colour in every panel
    fig.savefig(tmp_path / "a.png")
    assert_not_blank(load_rgb(tmp_path / "a.png"))
    with pytest.raises(UsageError, match="no forward statistics"):
        activation_stats_plot(rows, stats=("mean",), modules=["nope"])


def test_histogram_counts_finite_values_only() -> None:
    values = torch.tensor([0.0, 1.0, 1.0, 2.0, math.nan, math.inf])
    fig = activation_histogram(values, bins=2, title="layer")
    ax = fig.axes[0]
    counts = [bar.get_height() for bar in ax.patches]
    assert counts == [1.0, 3.0]  # bins [0, 1) and [1, 2]: {0} and {1, 1, 2}
    assert ax.get_title() == "layer: 4 values, 2 non-finite left out"
    with pytest.raises(UsageError, match="no finite"):
        activation_histogram(torch.tensor([math.nan]))


def test_missing_matplotlib_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import now fails
    with pytest.raises(MissingExtraError, match=r"hookscope\[plots\]"):
        activation_histogram(torch.ones(3))
