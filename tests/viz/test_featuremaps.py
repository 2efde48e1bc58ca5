"""Feature-map grids: channel choice, per-channel normalisation, labels, PNG files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import hookscope
from hookscope.errors import UsageError
from hookscope.viz import feature_map_grid, save_feature_maps, select_channels, write_feature_maps
from hookscope.zoo import SmallCNN
from tests.viz.images import assert_not_blank, load_rgb


def _channels() -> torch.Tensor:
    # 4 channels of 2x2; means: ch0 = 2.5, ch1 = 7.0 (constant), ch2 = -1.0, ch3 = 4.0
    return torch.tensor(
        [
            [[1.0, 2.0], [3.0, 4.0]],
            [[7.0, 7.0], [7.0, 7.0]],
            [[-2.0, 0.0], [-2.0, 0.0]],
            [[0.0, 8.0], [0.0, 8.0]],
        ]
    )


def test_top_k_by_mean_and_per_channel_normalisation() -> None:
    chosen = select_channels(_channels().unsqueeze(0), top_k=3)
    assert chosen.indices == (1, 3, 0)
    assert chosen.means == (7.0, 4.0, 2.5)
    # ch1 is constant -> zeros; ch3 (0..8) -> (x - 0) / 8; ch0 (1..4) -> (x - 1) / 3
    torch.testing.assert_close(chosen.maps[0], torch.zeros(2, 2))
    torch.testing.assert_close(chosen.maps[1], torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    torch.testing.assert_close(chosen.maps[2], torch.tensor([[0.0, 1 / 3], [2 / 3, 1.0]]))


def test_top_k_larger_than_channels_keeps_all_and_picks_sample() -> None:
    batch = torch.stack([torch.zeros(4, 2, 2), _channels()])
    chosen = select_channels(batch, top_k=99, sample=1)
    assert chosen.indices == (1, 3, 0, 2)


@pytest.mark.parametrize(
    ("tensor", "options", "shown"),
    [
        (torch.zeros(3, 4), {}, r"\(3, 4\)"),
        (torch.zeros(2, 3, 4, 4), {"sample": 2}, "sample=2"),
        (torch.zeros(3, 4, 4), {"top_k": 0}, "top_k"),
    ],
)
def test_bad_inputs_are_usage_errors(
    tensor: torch.Tensor, options: dict[str, int], shown: str
) -> None:
    with pytest.raises(UsageError, match=shown):
        select_channels(tensor, **options)


def test_grid_labels_channel_indices_in_rank_order() -> None:
    fig = feature_map_grid(_channels(), top_k=3, ncols=2, title="toy")
    titles = [ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert titles == ["ch 1", "ch 3", "ch 0", ""]  # 2x2 grid, last cell switched off
    assert "top 3 of 4 channels" in fig.get_suptitle()


def test_png_of_a_real_conv_activation(tmp_path: Path) -> None:
    model = SmallCNN().eval()
    with torch.no_grad(), hookscope.capture(model, "features.4") as cache:
        model(torch.randn(1, 3, 32, 32))
        path = save_feature_maps(
            cache["features.4"], tmp_path / "maps" / "f4.png", top_k=16, title="features.4"
        )
    pixels = load_rgb(path)
    # 16 channels -> 4 x 4 grid; figure 1.6 in per cell, 0.4 in title, 100 dpi:
    # width 4 * 1.6 * 100 = 640, height (4 * 1.6 + 0.4) * 100 = 680
    assert pixels.shape == (680, 640, 3)
    assert_not_blank(pixels)


def test_write_feature_maps_skips_non_image_outputs(tmp_path: Path) -> None:
    model = SmallCNN().eval()
    with torch.no_grad(), hookscope.capture(model, ["features.0", "head"]) as cache:
        model(torch.randn(1, 3, 32, 32))
        written, skipped = write_feature_maps(cache, tmp_path, top_k=4)
    assert [p.name for p in written] == ["features.0.png"]
    assert skipped == ["head (1, 10)"]
