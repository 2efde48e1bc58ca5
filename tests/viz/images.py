"""Checks on rendered PNGs: size and that the picture is not blank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def load_rgb(path: Path) -> np.ndarray:
    """``(H, W, 3)`` uint8 pixels of a PNG."""
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def assert_not_blank(pixels: np.ndarray, *, min_colours: int = 50) -> None:
    """A real picture has many distinct colours and varies a lot (a blank page has one)."""
    colours = np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)
    assert len(colours) >= min_colours, f"only {len(colours)} distinct colours"
    assert pixels.std() > 10, f"pixel std {pixels.std():.1f}: nearly uniform"
