"""``hookscope featuremaps``: PNG grids from a random input or an image file; exit codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from hookscope.cli.featuremaps import load_image
from hookscope.cli.main import main
from tests.viz.images import assert_not_blank, load_rgb

SMALL = "hookscope.zoo:small_cnn"


def test_random_input_draws_every_conv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "maps"
    code = main(["featuremaps", SMALL, "--input-size", "1,3,32,32", "-o", str(out), "--top-k", "9"])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["features.0.png", "features.4.png"]
    pixels = load_rgb(out / "features.4.png")
    # 9 channels -> 3 x 3 grid of 1.6 in cells plus a 0.4 in title at 100 dpi: 480 x 520
    assert pixels.shape == (520, 480, 3)
    assert_not_blank(pixels)
    assert f"wrote {out / 'features.0.png'}" in capsys.readouterr().out


def test_image_input_is_resized_and_drawn(tmp_path: Path) -> None:
    stripes = np.zeros((40, 48, 3), dtype=np.uint8)
    stripes[:, ::4] = (255, 128, 0)
    Image.fromarray(stripes).save(tmp_path / "in.png")
    out = tmp_path / "maps"
    args = ["featuremaps", SMALL, "--input", str(tmp_path / "in.png"), "-o", str(out)]
    code = main([*args, "--input-size", "1,3,32,32", "--modules", "features.0"])
    assert code == 0
    assert [p.name for p in out.iterdir()] == ["features.0.png"]
    assert_not_blank(load_rgb(out / "features.0.png"))


def test_load_image_scales_pixels_to_unit_range(tmp_path: Path) -> None:
    pixels = np.array([[[255, 0, 51], [0, 102, 0]]], dtype=np.uint8)  # 1 x 2 RGB
    Image.fromarray(pixels).save(tmp_path / "tiny.png")
    x = load_image(tmp_path / "tiny.png", None)
    # Hand-computed: value / 255, channels first: R = [1, 0], G = [0, 0.4], B = [0.2, 0]
    expected = torch.tensor([[[[1.0, 0.0]], [[0.0, 0.4]], [[0.2, 0.0]]]])
    torch.testing.assert_close(x, expected)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--modules", "nothing.*"], "matches no module"),
        (["--modules", "flatten"], "no selected module produced a 4-D"),
        (["--top-k", "0"], "--top-k must be at least 1"),
        (["--input-size", "1,3,32"], "N,C,H,W"),
        (["--input-size", "1,1,32,32"], "the model failed on an input of shape (1, 1, 32, 32)"),
        (["--input", "missing.png"], "image not found"),
    ],
)
def test_errors_are_one_line_exit_2(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["featuremaps", SMALL, "-o", str(tmp_path), "--input-size", "1,3,32,32"]
    code = main([*base, *extra])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
