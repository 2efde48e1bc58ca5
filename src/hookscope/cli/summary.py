"""``hookscope summary MODEL_SPEC``: parameters, shapes, MACs and memory per module.

Examples::

    hookscope summary hookscope.zoo:resnet50_like --input-size 1,3,224,224
    hookscope summary model.py:build --kwargs '{"num_classes": 10}' \\
        --input-size 1,3,32,32 --input-size 1,5 --dtype float32 --dtype int64
    hookscope summary lm.py:tiny_gpt --input-ids 1,128 --input attention_mask=1,128
    hookscope summary seg.py:net --input batch.image=1,3,64,64 --input batch.mask=1,64,64:bool
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch

from hookscope._files import check_writable, write_text
from hookscope.cli.inputs import add_input_arguments, make_keyword_inputs, parse_inputs
from hookscope.errors import UsageError
from hookscope.modelspec import load_model, parse_kwargs
from hookscope.summary import summary

_FORMATS = ("table", "json", "csv", "markdown")


def register(subparsers: Any) -> None:
    """Add the ``summary`` subcommand."""
    parser = subparsers.add_parser(
        "summary",
        help="parameter / shape / MAC table of a model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    add_input_arguments(parser, device="auto")
    parser.add_argument("--depth", type=int, help="deepest row depth to list (root is 0)")
    parser.add_argument("--format", choices=_FORMATS, default="table")
    parser.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print (or write) the summary in the chosen format."""
    if args.depth is not None and args.depth < 0:
        raise UsageError(f"--depth must be >= 0, got {args.depth}")
    spec = parse_inputs(args)
    if spec.empty:
        raise UsageError("give --input-size SHAPE, --input-ids SHAPE or --input NAME=SHAPE")
    # Sized inputs are made by summary() itself, on its device (meta by default).
    keywords = make_keyword_inputs(spec, torch.device("cpu"))
    if args.output is not None:
        check_writable(args.output, "-o")
    model = load_model(args.model, parse_kwargs(args.kwargs))
    result = summary(
        model,
        input_size=list(spec.sizes) or None,
        dtypes=list(spec.dtypes) or None,
        device=args.device,
        depth=args.depth,
        **keywords,
    )
    text = result.render(args.format)
    if args.output is not None:
        write_text(args.output, text + "\n", "-o")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0
