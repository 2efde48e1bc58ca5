"""Pictures: feature-map grids, gradient-flow and activation plots, the HTML report.

matplotlib is the optional ``plots`` extra, imported only when a figure is
drawn; without it drawing raises `MissingExtraError` with the install hint.
"""

from __future__ import annotations

from hookscope.viz.featuremaps import (
    ChannelSelection,
    feature_map_grid,
    save_feature_maps,
    select_channels,
    write_feature_maps,
)
from hookscope.viz.plots import activation_histogram, activation_stats_plot, gradient_flow_plot
from hookscope.viz.report import SECTIONS, ReportResult, render_report, write_report
from hookscope.viz.rundir import RunData, load_run

__all__ = [
    "SECTIONS",
    "ChannelSelection",
    "ReportResult",
    "RunData",
    "activation_histogram",
    "activation_stats_plot",
    "feature_map_grid",
    "gradient_flow_plot",
    "load_run",
    "render_report",
    "save_feature_maps",
    "select_channels",
    "write_feature_maps",
    "write_report",
]
