"""Feature-map grids: the channels of one conv activation as small images.

Channels are ranked by their mean activation (strongest first), the top
``top_k`` are kept, and each is min-max normalised on its own so a weak
channel is as readable as a strong one; the title of each cell is the
channel index in the original tensor.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hookscope.errors import UsageError
from hookscope.viz._mpl import new_figure, plain, save_png


@dataclass(frozen=True)
class ChannelSelection:
    """The channels a grid shows.

    Attributes:
        indices: channel indices in the activation, strongest mean first.
        means: mean activation of each shown channel (same order).
        maps: ``(len(indices), H, W)`` float32 tensor, each map scaled to [0, 1]
            (a constant channel becomes all zeros).
    """

    indices: tuple[int, ...]
    means: tuple[float, ...]
    maps: torch.Tensor


def select_channels(
    activation: torch.Tensor, *, top_k: int = 16, sample: int = 0
) -> ChannelSelection:
    """Pick the ``top_k`` channels by mean activation and normalise each to [0, 1].

    Args:
        activation: ``(N, C, H, W)`` or ``(C, H, W)``.
        top_k: how many channels to keep (all of them if there are fewer).
        sample: which item of the batch to show.

    Raises:
        UsageError: the tensor is not 3-D/4-D, ``top_k < 1`` or ``sample`` is out of range.
    """
    if top_k < 1:
        raise UsageError(f"top_k must be at least 1, got {top_k!r}")
    act = activation.detach()
    if act.dim() == 4:
        if not 0 <= sample < act.shape[0]:
            raise UsageError(f"sample={sample} is out of range for a batch of {act.shape[0]}")
        act = act[sample]
    elif act.dim() != 3:
        raise UsageError(
            f"a feature-map grid needs a (N, C, H, W) or (C, H, W) tensor, got shape {tuple(act.shape)}"
        )
    act = act.to(device="cpu", dtype=torch.float32)
    means = act.mean(dim=(1, 2))
    k = min(top_k, act.shape[0])
    order = torch.argsort(means, descending=True, stable=True)[:k]
    chosen = act[order]
    low = chosen.amin(dim=(1, 2), keepdim=True)
    span = chosen.amax(dim=(1, 2), keepdim=True) - low
    maps = torch.where(span > 0, (chosen - low) / span.clamp_min(1e-30), torch.zeros_like(chosen))
    return ChannelSelection(
        tuple(int(i) for i in order), tuple(float(means[i]) for i in order), maps
    )


def feature_map_grid(
    activation: torch.Tensor,
    *,
    top_k: int = 16,
    sample: int = 0,
    ncols: int | None = None,
    title: str | None = None,
    cmap: str = "viridis",
) -> Any:
    """A matplotlib figure with the ``top_k`` strongest channels of ``activation``.

    Args:
        activation: ``(N, C, H, W)`` or ``(C, H, W)`` tensor, e.g. from `hookscope.capture`.
        top_k: channels to show, strongest mean activation first.
        sample: batch item to show.
        ncols: grid columns (default: about the square root of ``top_k``).
        title: figure title (e.g. the module name).
        cmap: matplotlib colormap name.

    Returns:
        A ``matplotlib.figure.Figure``; save it with `save_feature_maps` or ``fig.savefig``.
    """
    chosen = select_channels(activation, top_k=top_k, sample=sample)
    count = len(chosen.indices)
    cols = ncols if ncols is not None else math.ceil(math.sqrt(count))
    if cols < 1:
        raise UsageError(f"ncols must be at least 1, got {ncols!r}")
    rows = math.ceil(count / cols)
    fig = new_figure(1.6 * cols, 1.6 * rows + (0.4 if title else 0.0))
    axes = fig.subplots(rows, cols, squeeze=False)
    image = None
    for slot, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if slot >= count:
            ax.set_axis_off()
            continue
        image = ax.imshow(chosen.maps[slot].numpy(), cmap=cmap, vmin=0.0, vmax=1.0)
        ax.set_title(f"ch {chosen.indices[slot]}", fontsize=8)
    bar = fig.colorbar(image, ax=axes, shrink=0.8, ticks=[0.0, 1.0])
    bar.ax.set_yticklabels(["min", "max"], fontsize=7)
    bar.set_label("each channel scaled to its own min..max", fontsize=7)
    if title:
        total = activation.shape[-3]
        fig.suptitle(plain(f"{title}  (top {count} of {total} channels by mean)"), fontsize=10)
    return fig


def save_feature_maps(activation: torch.Tensor, path: str | Path, **options: Any) -> Path:
    """Draw `feature_map_grid` (same keyword options) and save it as a PNG at ``path``."""
    fig = feature_map_grid(activation, **options)
    return save_png(fig, path)


#: Longest file stem written (file systems allow 255 bytes per name).
MAX_STEM = 100


def file_stem(key: str) -> str:
    """A file name for ``key``: unique per key, at most `MAX_STEM` characters.

    A key of letters, digits and ``._-`` (``features.0``) is its own stem. Any
    other key (``a/b``, a non-ASCII or a 300-character name) gets its other
    characters replaced by ``_``, is shortened, and ends in ``-`` and 8 hex
    digits of its SHA-1, so ``a/b`` and ``a_b`` never share a file.
    """
    clean = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "_" for ch in key)
    if clean == key and 0 < len(key) <= MAX_STEM and not key.startswith("."):
        return key
    digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{clean.lstrip('.')[: MAX_STEM - 9] or 'root'}-{digest}"


def grid_title(key: str, calls: int) -> str:
    """The grid's title: the key, and which call it shows when there were several."""
    return (key or "(root)") + (f" (last of {calls} calls)" if calls > 1 else "")


def write_feature_maps(
    activations: Mapping[str, torch.Tensor],
    out_dir: str | Path,
    *,
    calls: Mapping[str, int] | None = None,
    **options: Any,
) -> tuple[list[Path], list[str]]:
    """Save a grid for every 4-D activation in ``activations`` (e.g. a `hookscope.capture`).

    Files are named by `file_stem` (``features.0`` → ``features.0.png``).

    Args:
        activations: ``{key: tensor}``; only ``(N, C, H, W)`` tensors are drawn.
        out_dir: folder for the PNGs (created).
        calls: how often each key was stored (``capture.calls``): a module
            called several times shows its last call, and the title says so.
        **options: passed to `feature_map_grid` (``top_k``, ``sample``, ``cmap`` ...).

    Returns:
        ``(written paths, skipped keys with their shapes)``.
    """
    written: list[Path] = []
    skipped: list[str] = []
    for key, tensor in activations.items():
        if tensor.dim() != 4:
            skipped.append(f"{key} {tuple(tensor.shape)}")
            continue
        title = grid_title(key, (calls or {}).get(key, 1))
        path = Path(out_dir) / f"{file_stem(key)}.png"
        written.append(save_feature_maps(tensor, path, title=title, **options))
    return written, skipped
