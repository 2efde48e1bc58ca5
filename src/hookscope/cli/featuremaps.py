"""``hookscope featuremaps MODEL_SPEC``: feature-map grids of conv activations as PNGs.

Runs the model once (eval mode, no grad) on an image or a random input,
captures the selected modules' outputs and writes one grid per 4-D output:
the ``--top-k`` channels by mean activation, each normalised on its own.
A selected module whose forward() is called directly (so hooks cannot see
it) is named on stderr and the exit code is 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.cli.inputs import add_input_arguments, parse_device, parse_inputs
from hookscope.errors import ForwardError, UsageError, require_extra
from hookscope.hooks.capture import capture
from hookscope.hooks.session import session
from hookscope.modelspec import load_model, parse_kwargs
from hookscope.summary.inputs import make_tensor
from hookscope.viz.featuremaps import write_feature_maps

DEFAULT_SIZE = (1, 3, 224, 224)


def register(subparsers: Any) -> None:
    """Add the ``featuremaps`` subcommand."""
    parser = subparsers.add_parser(
        "featuremaps", help="feature-map grids of conv layers as PNGs", description=__doc__
    )
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    parser.add_argument(
        "--input",
        default="random",
        help="an image file (PNG/JPEG, scaled to [0, 1]) or 'random' (default)",
    )
    add_input_arguments(parser, keywords=False)
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


def make_input(args: argparse.Namespace) -> torch.Tensor:
    """The model input ``--input``, ``--input-size`` and ``--dtype`` describe (on the CPU)."""
    spec = parse_inputs(args)  # one image input: the last --input-size / --dtype given wins
    size = spec.sizes[-1] if spec.sizes else None
    if size is not None and len(size) != 4:
        raise UsageError(f"--input-size must be N,C,H,W, got {args.input_size[-1]!r}")
    dtype = spec.dtypes[-1] if spec.dtypes else torch.float32
    if not dtype.is_floating_point:
        raise UsageError(f"featuremaps needs a floating-point --dtype, got {args.dtype[-1]!r}")
    if args.input != "random":
        return load_image(Path(args.input), size).to(dtype)
    generator = torch.Generator().manual_seed(args.seed)
    return make_tensor(size or DEFAULT_SIZE, dtype, torch.device("cpu"), generator=generator)


def _forward(model: nn.Module, x: torch.Tensor, selector: Any, spec: str) -> tuple[Any, list[Any]]:
    """Run once with the capture and direct-``.forward()`` detection on."""
    with (
        session(model, detect_bypass=True, bypass="record", keep_wrappers=True) as watch,
        capture(model, selector, keep=True) as cache,
    ):
        if not cache.selected:
            what = f"--modules {' '.join(selector)}" if isinstance(selector, list) else "no Conv2d"
            raise UsageError(f"{what} matched no module of {spec}")
        selected = set(cache.selected)
        try:
            with torch.no_grad():
                model(x)
        except Exception as exc:
            raise ForwardError(
                f"the model failed on an input of shape {tuple(x.shape)}: "
                f"{type(exc).__name__}: {exc} (set --input-size?)"
            ) from exc
    bypassed = [b for b in watch.bypasses if selected.intersection(b.names)]
    return cache, bypassed


def run(args: argparse.Namespace) -> int:
    """Capture the selected outputs and write one PNG grid per 4-D activation.

    Exit code 1 when a selected module ran through a direct ``.forward()``
    call: its hooks, hence its picture, were skipped.
    """
    if args.top_k < 1:
        raise UsageError(f"--top-k must be at least 1, got {args.top_k}")
    x = make_input(args)
    device = parse_device(args.device)
    model = load_model(args.model, parse_kwargs(args.kwargs))
    model.eval().to(device)
    selector: Any = args.modules if args.modules else nn.Conv2d
    cache, bypassed = _forward(model, x.to(device), selector, args.model)
    for bypass in bypassed:
        print(
            f"not drawn: {bypass.module} ({bypass.module_type}): its forward() was called "
            f"directly at {bypass.call_site}, so its hooks never ran; fix: {bypass.fix}",
            file=sys.stderr,
        )
    if not cache and not bypassed:
        raise UsageError("none of the selected module(s) ran; nothing to draw")
    written, skipped = write_feature_maps(cache, args.output, top_k=args.top_k, calls=cache.calls)
    for path in written:
        print(f"wrote {path}")
    if skipped:
        print(f"skipped (not N,C,H,W): {', '.join(skipped)}")
    if not written and not bypassed:
        raise UsageError("no selected module produced a 4-D (N, C, H, W) output; nothing to draw")
    return 1 if bypassed else 0
