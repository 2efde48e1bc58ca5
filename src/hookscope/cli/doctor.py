"""``hookscope doctor MODEL_SPEC --input-size ...``: hooks that did not fire, and why.

Exit codes: 0 every hook fired and no ``.forward()`` was called directly,
1 findings, 2 bad input (spec, shape, dtype, or the model raised).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hookscope._files import check_writable, write_text
from hookscope.cli.inputs import add_input_arguments, make_inputs, parse_device, parse_inputs
from hookscope.doctor import doctor
from hookscope.errors import UsageError
from hookscope.modelspec import load_model, parse_kwargs


def register(subparsers: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser = subparsers.add_parser(
        "doctor",
        help="hooks that did not fire, and why; direct .forward() calls",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    add_input_arguments(parser)
    parser.add_argument("--backward", action="store_true", help="also run a backward pass")
    parser.add_argument("--eval", action="store_true", help="put the model in eval mode first")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the doctor on the model and print its report."""
    spec = parse_inputs(args)
    if spec.empty:
        raise UsageError(
            "doctor needs at least one --input-size (or --input-ids SHAPE, --input NAME=SHAPE), "
            "e.g. --input-size 1,3,224,224"
        )
    device = parse_device(args.device)
    positional, keywords = make_inputs(spec, device)
    if args.out is not None:
        check_writable(args.out, "--out")
    model = load_model(args.model, parse_kwargs(args.kwargs))
    model.to(device)
    if args.eval:
        model.eval()
    report = doctor(model, *positional, backward=args.backward, **keywords)
    data = report.to_dict()
    if args.out is not None:
        write_text(args.out, json.dumps(data, indent=2) + "\n", "--out")
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        print(report)
    return 0 if report.ok else 1
