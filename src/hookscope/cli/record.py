"""``hookscope record MODEL_SPEC --input-size ... -o run.safetensors``: save every module's tensors.

The file holds each module call's inputs and outputs (and output gradients
with ``--backward``) plus a JSON index; compare it later with
``hookscope compare run.safetensors MODEL_SPEC``. Example::

    hookscope record hookscope.zoo:small_cnn --input-size 2,3,32,32 --eval -o runs/cnn.safetensors
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hookscope._files import check_writable
from hookscope.cli.compare import add_input_options, load, model_inputs
from hookscope.compare import record
from hookscope.compare.recording import DEFAULT_MAX_BYTES
from hookscope.errors import UsageError


def register(subparsers: Any) -> None:
    """Add the ``record`` subcommand."""
    parser = subparsers.add_parser(
        "record",
        help="save every module's inputs and outputs to a .safetensors recording",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    add_input_options(parser)
    parser.add_argument("--backward", action="store_true", help="also record output gradients")
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"budget for all recorded tensors (default {DEFAULT_MAX_BYTES:,})",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, help="the .safetensors file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Record the model and say how much was written."""
    if args.output.suffix != ".safetensors":
        raise UsageError(f"-o must name a .safetensors file, got {str(args.output)!r}")
    check_writable(args.output, "-o")
    positional, keywords = model_inputs(args)
    if not positional and not keywords:
        raise UsageError("give --input-size SHAPE, --input-ids SHAPE or --input NAME=SHAPE")
    model = load(args.model, args)
    try:
        recording = record(
            model,
            *positional,
            path=args.output,
            backward=args.backward,
            max_bytes=args.max_bytes,
            **keywords,
        )
    except OSError as exc:
        raise UsageError(f"cannot write {str(args.output)!r}: {exc.strerror or exc}") from None
    size = args.output.stat().st_size
    print(
        f"wrote {args.output}: {len(recording.calls)} module call(s), {size:,} bytes",
        file=sys.stderr,
    )
    return 0
