"""``hookscope featuremaps MODEL_SPEC``: feature-map grids of conv activations as PNGs.

Runs the model once (eval mode, no grad) on an image or a random input,
captures the selected modules' outputs and writes one grid per 4-D output:
the ``--top-k`` channels by mean activation, each normalised on its own.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.errors import ForwardError, UsageError, require_extra
from hookscope.hooks.capture import capture
from hookscope.modelspec import load_model, parse_kwargs, parse_shape
from hookscope.viz.featuremaps import write_feature_maps

DEFAULT_SIZE = (1, 3, 224, 224)


def register(subparsers: Any) -> None:
    """Add the ``featuremaps`` subcommand."""
    parser = subparsers.add_parser(
        "featuremaps", help="feature-map grids of conv layers as PNGs", description=__doc__
    )
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    parser.add_argument("--kwargs", help="JSON object of keyword arguments for the factory")
    parser.add_argument(
        "--input",
        default="random",
        help="an image file (PNG/JPEG, scaled to [0, 1]) or 'random' (default)",
    )
    parser.add_argument(
        "--input-size",
        help="N,C,H,W; random input shape (default 1,3,224,224); resizes an image to H,W",
    )
    parser.add_argument(
        "--modules",
        action="append",
        metavar="GLOB",
        help="modules to draw, by qualified-name glob; repeatable (default: every Conv2d)",
    )
    parser.add_argument("--top-k", type=int, default=16, help="channels per grid (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input")
    parser.add_argument(
        "-o", "--output", default="featuremaps", help="output folder (default featuremaps/)"
    )
    parser.set_defaults(func=run)


def load_image(path: Path, size: tuple[int, ...] | None) -> torch.Tensor:
    """An image file as a ``(1, C, H, W)`` float tensor in [0, 1].

    ``size`` (N,C,H,W) picks the channels (1 grey, 3 RGB) and resizes to H,W.
    """
    image_mod: Any = require_extra("PIL.Image", "plots")
    if not path.is_file():
        raise UsageError(f"--input image not found: {str(path)!r}")
    channels = 3 if size is None else size[1]
    if channels not in (1, 3):
        raise UsageError(f"an image input has 1 or 3 channels, --input-size asks for {channels}")
    try:
        image = image_mod.open(path).convert("L" if channels == 1 else "RGB")
    except OSError as exc:
        raise UsageError(f"cannot read image {str(path)!r}: {exc}") from None
    if size is not None:
        image = image.resize((size[3], size[2]))
    data = torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8)
    pixels = data.reshape(image.height, image.width, channels).permute(2, 0, 1)
    return (pixels.float() / 255.0).unsqueeze(0)


def make_input(text: str, size_text: str | None, seed: int) -> torch.Tensor:
    """The model input ``--input`` and ``--input-size`` describe."""
    size = parse_shape(size_text) if size_text else None
    if size is not None and len(size) != 4:
        raise UsageError(f"--input-size must be N,C,H,W, got {size_text!r}")
    if text == "random":
        generator = torch.Generator().manual_seed(seed)
        return torch.rand(size or DEFAULT_SIZE, generator=generator)
    return load_image(Path(text), size)


def run(args: argparse.Namespace) -> int:
    """Capture the selected outputs and write one PNG grid per 4-D activation."""
    if args.top_k < 1:
        raise UsageError(f"--top-k must be at least 1, got {args.top_k}")
    model = load_model(args.model, parse_kwargs(args.kwargs))
    x = make_input(args.input, args.input_size, args.seed)
    selector: Any = args.modules if args.modules else nn.Conv2d
    model.eval()
    with capture(model, selector, keep=True) as cache:
        if not cache.selected:
            raise UsageError(f"--modules {args.modules} matched no module of {args.model}")
        try:
            with torch.no_grad():
                model(x)
        except Exception as exc:
            raise ForwardError(
                f"the model failed on an input of shape {tuple(x.shape)}: "
                f"{type(exc).__name__}: {exc} (set --input-size?)"
            ) from exc
        selected = len(cache.selected)
    if not cache:
        raise UsageError(
            f"none of the {selected} selected module(s) ran; if their forward is called "
            "directly (module.forward(x)), hooks cannot see them: try hookscope doctor"
        )
    written, skipped = write_feature_maps(cache, args.output, top_k=args.top_k)
    for path in written:
        print(f"wrote {path}")
    if skipped:
        print(f"skipped (not N,C,H,W): {', '.join(skipped)}")
    if not written:
        raise UsageError("no selected module produced a 4-D (N, C, H, W) output; nothing to draw")
    return 0
