"""Lazy matplotlib access: the ``plots`` extra is optional.

Figures are built with ``matplotlib.figure.Figure`` and rendered by the Agg
canvas directly, never through ``pyplot``: no global figure registry to leak,
no GUI backend picked up from the environment, safe in threads and servers.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hookscope.errors import require_extra


def plain(text: str) -> str:
    """``text`` shown as typed: matplotlib reads ``$...$`` as mathtext (and a
    module name like ``$\\foo$`` would crash the drawing); ``\\$`` is a plain ``$``."""
    return text.replace("$", r"\$")


def new_figure(width: float, height: float, dpi: int = 100) -> Any:
    """A matplotlib ``Figure`` with an Agg canvas attached.

    Raises:
        MissingExtraError: matplotlib is not installed (``pip install 'hookscope[plots]'``).
    """
    figure_mod: Any = require_extra("matplotlib.figure", "plots")
    agg: Any = require_extra("matplotlib.backends.backend_agg", "plots")
    fig = figure_mod.Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    agg.FigureCanvasAgg(fig)
    return fig


def save_png(fig: Any, path: str | Path) -> Path:
    """Write ``fig`` as a PNG (parent folders are created) and return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out


def png_bytes(fig: Any) -> bytes:
    """``fig`` rendered as PNG bytes (for inlining into HTML)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
