"""Gradient-flow, activation-statistics and histogram plots.

Each function returns a ``matplotlib.figure.Figure`` (save it with
``fig.savefig(path)``); inputs are a `hookscope.Monitor`, its
``to_pandas()`` frame, or record dicts (see `hookscope.viz.records`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from hookscope.errors import UsageError
from hookscope.monitor.alerts import Thresholds
from hookscope.viz._mpl import new_figure, plain
from hookscope.viz.records import as_rows, flat_value, gradient_flow, layer_order, stat_envelopes

#: Gradient norms below this are drawn as vanishing (the Monitor's ``vanish_below``).
VANISHING = Thresholds.vanish_below
#: Gradient norms above this are drawn as exploding (the Monitor's ``explode_above``).
EXPLODING = Thresholds.explode_above

DEFAULT_STATS = ("mean", "std", "absmax", "zero_frac")


def gradient_flow_plot(
    source: Any,
    *,
    vanishing: float = VANISHING,
    exploding: float = EXPLODING,
    phase: str | None = None,
    title: str = "Gradient flow",
) -> Any:
    """Per-layer mean and max gradient norm on a log scale, with thresholds drawn.

    Layers are on the x axis in the order the model ran them when forward
    statistics were recorded too; otherwise in the order their gradients
    arrived (backward order), and the axis label says which. Bars are the
    largest norm over steps, dots the mean; dashed lines mark ``vanishing``
    and ``exploding``.

    Args:
        source: a `Monitor`, its ``to_pandas()`` frame, or record dicts.
        vanishing: norm below which a gradient counts as vanishing.
        exploding: norm above which a gradient counts as exploding.
        phase: ``"param"`` or ``"backward"`` records (default: param if present).
        title: figure title.

    Raises:
        UsageError: no gradient norms were recorded, or the thresholds are not
            ``0 < vanishing < exploding``.
    """
    if not 0 < vanishing < exploding:
        raise UsageError(f"need 0 < vanishing < exploding, got {vanishing!r} and {exploding!r}")
    rows = as_rows(source)
    layers = gradient_flow(rows, phase=phase)
    if not layers:
        raise UsageError("no gradient norms recorded (was backward run under the Monitor?)")
    if len(layers) > TALL_ABOVE:
        return _gradient_flow_tall(layers, layer_order(rows, layers), vanishing, exploding, title)
    fig = new_figure(max(6.0, 0.45 * len(layers) + 2.0), 4.5)
    ax = fig.add_subplot()
    xs = list(range(len(layers)))
    floor = vanishing / 10
    maxes = [max(layer.max, floor) for layer in layers]
    means = [max(layer.mean, floor) for layer in layers]
    ax.bar(xs, maxes, color="#9ecae1", label="max over steps")
    ax.plot(xs, means, "o", color="#08519c", label="mean over steps")
    _thresholds(ax.axhline, vanishing, exploding)
    ax.set_yscale("log")
    ax.set_ylim(floor, max(exploding * 10, max(maxes) * 2))
    ax.set_xticks(
        xs,
        [plain(layer.module or "(root)") for layer in layers],
        rotation=60,
        ha="right",
        fontsize=8,
    )
    ax.set_ylabel("gradient norm")
    ax.set_xlabel(f"layer, in {layer_order(rows, layers)}")
    ax.set_title(plain(title))
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    return fig


#: Above this many layers the gradient flow is drawn lying down: one row per
#: layer, labels horizontal and legible however many parameters there are.
TALL_ABOVE = 40


def _thresholds(line: Any, vanishing: float, exploding: float) -> None:
    line(
        vanishing, color="#d62728", linestyle="--", linewidth=1, label=f"vanishing < {vanishing:g}"
    )
    line(
        exploding, color="#ff7f0e", linestyle="--", linewidth=1, label=f"exploding > {exploding:g}"
    )


def _gradient_flow_tall(
    layers: Sequence[Any], order: str, vanishing: float, exploding: float, title: str
) -> Any:
    """One horizontal bar per layer (0.16 inch each), first layer at the top."""
    fig = new_figure(9.0, 1.6 + 0.16 * len(layers))
    ax = fig.add_subplot()
    ys = list(range(len(layers)))
    floor = vanishing / 10
    maxes = [max(layer.max, floor) for layer in layers]
    means = [max(layer.mean, floor) for layer in layers]
    ax.barh(ys, maxes, height=0.8, color="#9ecae1", label="max over steps")
    ax.plot(means, ys, "o", markersize=3, color="#08519c", label="mean over steps")
    _thresholds(ax.axvline, vanishing, exploding)
    ax.set_xscale("log")
    ax.set_xlim(floor, max(exploding * 10, max(maxes) * 2))
    ax.set_yticks(ys, [plain(layer.module or "(root)") for layer in layers], fontsize=7)
    ax.set_ylim(len(layers) - 0.5, -0.5)
    ax.set_xlabel("gradient norm")
    ax.set_ylabel(f"layer, in {order}")
    ax.set_title(plain(f"{title} ({len(layers)} layers)"))
    ax.grid(axis="x", which="major", alpha=0.3)
    ax.xaxis.set_tick_params(labeltop=True)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def activation_stats_plot(
    source: Any,
    *,
    stats: Sequence[str] = DEFAULT_STATS,
    modules: Sequence[str] | None = None,
    max_layers: int = 12,
    title: str = "Activation statistics over steps",
) -> Any:
    """One panel per statistic, one line per layer, step on the x axis.

    Args:
        source: a `Monitor`, its ``to_pandas()`` frame, or record dicts.
        stats: which forward statistics to draw (one panel each).
        modules: only these module names (default: the first ``max_layers`` that ran).
        max_layers: cap on lines per panel so the legend stays readable.
        title: figure title.

    Raises:
        UsageError: none of ``stats`` were recorded, or ``stats`` is empty.
    """
    if not stats:
        raise UsageError("stats must name at least one statistic, got an empty list")
    rows = as_rows(source)
    if modules is not None:
        wanted = set(modules)
        rows = [row for row in rows if row["module"] in wanted]
    every = {stat: stat_envelopes(rows, stat) for stat in stats}
    every = {stat: series for stat, series in every.items() if series}
    if not every:
        raise UsageError(f"no forward statistics {list(stats)} recorded for these modules")
    flat = {stat: flat_value(series) for stat, series in every.items()}
    panels = {stat: series for stat, series in every.items() if flat[stat] is None} or every
    # One colour (and line style past ten) per layer, the same in every panel.
    labels = list(dict.fromkeys(label for series in panels.values() for label in series))
    shown = labels[:max_layers]
    style = {label: (f"C{i % 10}", "-" if i < 10 else "--") for i, label in enumerate(shown)}
    cols = 2 if len(panels) > 1 else 1
    nrows = math.ceil(len(panels) / cols)
    fig = new_figure(6.0 * cols, 3.2 * nrows + 0.8)
    axes = fig.subplots(nrows, cols, squeeze=False)
    handles: dict[str, Any] = {}
    for ax, (stat, series) in zip(axes.flat, panels.items(), strict=False):
        for label in (label for label in shown if label in series):
            handles[label] = _series(ax, series[label], style[label], plain(label or "(root)"))
        ax.set_title(stat, fontsize=10)
        ax.set_xlabel("step")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_axis_off()
    ordered = [handles[label] for label in shown if label in handles]
    names = [plain(label or "(root)") for label in shown if label in handles]
    fig.legend(ordered, names, loc="outside lower center", ncols=min(5, len(names)), fontsize=7)
    more = len(labels) > max_layers
    text = f"{title} (first {max_layers} of {len(labels)} layers)" if more else title
    dropped = [f"{stat} = {flat[stat]:g}" for stat in every if stat not in panels]
    if dropped:
        text += "\nnot drawn, the same for every layer at every step: " + ", ".join(dropped)
    fig.suptitle(plain(text))
    return fig


def _series(ax: Any, points: list[tuple[int, float, float, float]], style: Any, label: str) -> Any:
    """One layer's line; a downsampled series also gets its min/max envelope, shaded."""
    colour, line = style
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    enveloped = any(p[2] != p[3] for p in points)
    (handle,) = ax.plot(
        xs,
        ys,
        marker="" if enveloped or len(xs) > 200 else ".",
        color=colour,
        linestyle=line,
        linewidth=1,
        label=label,
    )
    if enveloped:
        ax.fill_between(
            xs,
            [p[2] for p in points],
            [p[3] for p in points],
            color=colour,
            alpha=0.15,
            linewidth=0,
        )
    return handle


def activation_histogram(
    activation: torch.Tensor, *, bins: int = 60, title: str | None = None, log: bool = False
) -> Any:
    """Histogram of every value of one layer's activation (e.g. from `hookscope.capture`).

    Non-finite values are left out and counted in the title.

    Raises:
        UsageError: ``bins < 1`` or the tensor holds no finite value.
    """
    if bins < 1:
        raise UsageError(f"bins must be at least 1, got {bins!r}")
    values = activation.detach().to(device="cpu", dtype=torch.float32).flatten()
    finite = values[torch.isfinite(values)]
    if finite.numel() == 0:
        raise UsageError(f"no finite values to draw (tensor of {values.numel()} values)")
    fig = new_figure(6.0, 3.6)
    ax = fig.add_subplot()
    ax.hist(finite.numpy(), bins=bins, color="#3182bd", log=log)
    dropped = values.numel() - finite.numel()
    name = title or "activation"
    extra = f", {dropped} non-finite left out" if dropped else ""
    ax.set_title(plain(f"{name}: {finite.numel():,} values{extra}"), fontsize=10)
    ax.set_xlabel("value")
    ax.set_ylabel("count")
    ax.grid(alpha=0.3)
    return fig
