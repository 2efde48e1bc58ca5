"""``hookscope doctor MODEL_SPEC --input-size ...``: hooks that did not fire, and why.

Exit codes: 0 every hook fired and no ``.forward()`` was called directly,
1 findings, 2 bad input (spec, shape, dtype, or the model raised).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from hookscope.doctor import doctor
from hookscope.errors import UsageError
from hookscope.modelspec import load_model, parse_dtype, parse_kwargs, parse_shape


def register(subparsers: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser = subparsers.add_parser(
        "doctor",
        help="hooks that did not fire, and why; direct .forward() calls",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    parser.add_argument(
        "--input-size",
        action="append",
        metavar="SHAPE",
        help="shape of one positional input, e.g. 1,3,224,224 (repeat for more inputs)",
    )
    parser.add_argument("--dtype", default="float32", help="input dtype (default float32)")
    parser.add_argument("--kwargs", help="JSON object of keyword arguments for the factory")
    parser.add_argument("--backward", action="store_true", help="also run a backward pass")
    parser.add_argument("--eval", action="store_true", help="put the model in eval mode first")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the report as JSON")
    parser.set_defaults(func=run)


def make_input(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A deterministic example input: normal noise for floats, zeros otherwise."""
    if dtype.is_floating_point or dtype.is_complex:
        generator = torch.Generator().manual_seed(0)
        return torch.randn(shape, generator=generator, dtype=dtype)
    return torch.zeros(shape, dtype=dtype)


def run(args: argparse.Namespace) -> int:
    """Run the doctor on the model and print its report."""
    if not args.input_size:
        raise UsageError("doctor needs at least one --input-size, e.g. --input-size 1,3,224,224")
    shapes = [parse_shape(text) for text in args.input_size]
    dtype = parse_dtype(args.dtype)
    model = load_model(args.model, parse_kwargs(args.kwargs))
    if args.eval:
        model.eval()
    inputs = [make_input(shape, dtype) for shape in shapes]
    report = doctor(model, *inputs, backward=args.backward)
    data = report.to_dict()
    if args.out is not None:
        try:
            args.out.write_text(json.dumps(data, indent=2) + "\n")
        except OSError as exc:
            raise UsageError(f"cannot write --out {str(args.out)!r}: {exc.strerror}") from None
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        print(report)
    return 0 if report.ok else 1
