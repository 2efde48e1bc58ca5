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

from hookscope.errors import UsageError
from hookscope.modelspec import load_model, parse_dtype, parse_kwargs, parse_shape
from hookscope.summary import summary
from hookscope.summary.inputs import make_tensor

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
    parser.add_argument("--kwargs", help="JSON object of keyword arguments for the factory")
    parser.add_argument(
        "--input-size",
        action="append",
        default=[],
        metavar="SHAPE",
        help="shape of a positional input, e.g. 1,3,224,224 (repeat for several inputs)",
    )
    parser.add_argument(
        "--dtype",
        action="append",
        default=[],
        help="dtype of each --input-size (one value applies to all; default float32)",
    )
    parser.add_argument(
        "--input-ids", metavar="SHAPE", help="integer token ids of this shape as input_ids="
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=SHAPE[:DTYPE]",
        help="a keyword input; NAME.KEY=... builds a dict input NAME={KEY: ...}",
    )
    parser.add_argument("--depth", type=int, help="deepest row depth to list (root is 0)")
    parser.add_argument(
        "--device", default="auto", help="auto (meta, real run if needed), meta, cpu, cuda, ..."
    )
    parser.add_argument("--format", choices=_FORMATS, default="table")
    parser.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    parser.set_defaults(func=run)


def parse_keyword_input(text: str) -> tuple[str, str | None, torch.Tensor]:
    """``"mask=1,128:bool"`` → ``("mask", None, tensor)``; ``"b.x=2,3"`` → ``("b", "x", ...)``."""
    name, sep, spec = text.partition("=")
    if not sep or not name or not spec:
        raise UsageError(f"--input takes NAME=SHAPE[:DTYPE], got {text!r}")
    shape_text, _, dtype_text = spec.partition(":")
    dtype = parse_dtype(dtype_text) if dtype_text else torch.float32
    tensor = make_tensor(parse_shape(shape_text), dtype, torch.device("cpu"))
    outer, dot, key = name.partition(".")
    if not outer.isidentifier() or (dot and not key):
        raise UsageError(f"bad input name {name!r} in --input {text!r}")
    return outer, key or None, tensor


def keyword_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword inputs from ``--input-ids`` and ``--input``."""
    inputs: dict[str, Any] = {}
    if args.input_ids:
        shape = parse_shape(args.input_ids)
        inputs["input_ids"] = make_tensor(shape, torch.int64, torch.device("cpu"))
    for text in args.input:
        name, key, tensor = parse_keyword_input(text)
        if key is None:
            inputs[name] = tensor
        else:
            group = inputs.setdefault(name, {})
            if not isinstance(group, dict):
                raise UsageError(f"--input {text!r}: {name} is already a tensor input")
            group[key] = tensor
    return inputs


def run(args: argparse.Namespace) -> int:
    """Print (or write) the summary in the chosen format."""
    if args.depth is not None and args.depth < 0:
        raise UsageError(f"--depth must be >= 0, got {args.depth}")
    if args.dtype and not args.input_size:
        raise UsageError(f"--dtype {args.dtype[0]} needs --input-size")
    sizes = [parse_shape(text) for text in args.input_size]
    dtypes = [parse_dtype(text) for text in args.dtype] or None
    keywords = keyword_inputs(args)
    if not sizes and not keywords:
        raise UsageError("give --input-size SHAPE, --input-ids SHAPE or --input NAME=SHAPE")
    model = load_model(args.model, parse_kwargs(args.kwargs))
    result = summary(
        model,
        input_size=sizes or None,
        dtypes=dtypes,
        device=args.device,
        depth=args.depth,
        **keywords,
    )
    text = result.render(args.format)
    if args.output is not None:
        args.output.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0
