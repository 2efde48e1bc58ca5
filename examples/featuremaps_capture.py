"""Capture conv activations and draw feature-map grids and a histogram.

Run: python examples/featuremaps_capture.py   (writes PNGs to runs/featuremaps_example/)
"""

from __future__ import annotations

from pathlib import Path

import torch

import hookscope
from hookscope.viz import activation_histogram, save_feature_maps, write_feature_maps
from hookscope.zoo import resnet50_like

out = Path("runs/featuremaps_example")
model = resnet50_like().eval()
x = torch.rand(1, 3, 224, 224)

# Detached CPU copies of the selected outputs, by qualified name; at most 64 MiB.
with (
    torch.no_grad(),
    hookscope.capture(model, ["conv1", "layer1.0.conv*"], max_bytes=64 << 20, keep=True) as cache,
):
    model(x)

for key, tensor in cache.items():
    print(f"{key:18} {tuple(tensor.shape)}")
print(f"held: {cache.nbytes / 2**20:.1f} MiB")

# One grid: the 16 channels with the highest mean activation, each normalised on its own.
save_feature_maps(cache["conv1"], out / "conv1.png", top_k=16, title="conv1")
# Every 4-D capture at once; non-image outputs are skipped and listed.
written, skipped = write_feature_maps(cache, out / "all", top_k=9)
activation_histogram(cache["layer1.0.conv3"], title="layer1.0.conv3").savefig(out / "hist.png")
print("wrote", out / "conv1.png", *written, out / "hist.png", sep="\n  ")
