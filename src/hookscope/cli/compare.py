"""``hookscope compare A [B]``: where two runs of a model part ways, module by module.

A and B are MODEL_SPECs or recordings (``.safetensors`` from ``hookscope
record``). Without B, B is A under the ``--*-b`` options. Examples::

    hookscope compare hookscope.zoo:small_cnn --input-size 2,3,32,32 --dtype-b bf16
    hookscope compare lm.py:tiny_gpt --input-ids 1,64 --autocast-b bf16 --isolate
    hookscope compare lm.py:tiny_gpt --input-ids 1,64 --compile-b
    hookscope compare runs/before.safetensors lm.py:tiny_gpt -o runs/compare.html

Exit codes: 0 every module within ``--rtol``/``--atol``, 1 some module
outside it, 2 bad input.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope._files import check_writable, write_text
from hookscope.cli.inputs import add_input_arguments, make_inputs, parse_device, parse_inputs
from hookscope.compare import compare
from hookscope.compare.format import FORMATS
from hookscope.compare.records import Mode
from hookscope.errors import UsageError
from hookscope.modelspec import load_model, parse_dtype, parse_kwargs


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """The shared input options (`hookscope.cli.inputs`), ``--eval`` and ``--seed``."""
    add_input_arguments(parser)
    parser.add_argument("--eval", action="store_true", help="put the model(s) in eval mode")
    parser.add_argument("--seed", type=int, default=0, help="seed for building models and inputs")


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="compare two runs module by module and name the layer that differs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("a", metavar="A", help="MODEL_SPEC or recording.safetensors (reference)")
    parser.add_argument("b", metavar="B", nargs="?", help="MODEL_SPEC or recording (default: A)")
    add_input_options(parser)
    parser.add_argument("--isolate", action="store_true", help="feed each module of B A's inputs")
    parser.add_argument("--dtype-b", metavar="DTYPE", help="cast B (and its inputs) to DTYPE")
    parser.add_argument("--autocast-b", metavar="DTYPE", help="run B under torch.autocast(DTYPE)")
    parser.add_argument("--compile-b", action="store_true", help="run B through torch.compile")
    parser.add_argument("--device-b", metavar="DEVICE", help="move B to DEVICE (cuda, cpu, ...)")
    parser.add_argument("--backward", action="store_true", help="also compare output gradients")
    parser.add_argument("--match", choices=("name", "order"), default="name")
    parser.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance (1e-3)")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance (1e-5)")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.add_argument(
        "-o", "--output", type=Path, help="write here; a .html file gets the HTML report"
    )
    parser.set_defaults(func=run)


def is_recording(text: str) -> bool:
    """True for an argument naming a recording rather than a MODEL_SPEC."""
    return text.endswith(".safetensors")


def model_inputs(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword inputs the options describe (on ``--device``, seeded)."""
    spec = parse_inputs(args)
    torch.manual_seed(args.seed)
    return make_inputs(spec, parse_device(args.device))


def load(spec: str, args: argparse.Namespace) -> nn.Module:
    """Build a MODEL_SPEC with the seed, ``--device`` and ``--eval`` applied."""
    torch.manual_seed(args.seed)
    model = load_model(spec, parse_kwargs(args.kwargs)).to(parse_device(args.device))
    return model.eval() if args.eval else model


def _side_b(args: argparse.Namespace, a: Any) -> Any:
    if args.b is not None and is_recording(args.b):
        if args.dtype_b or args.autocast_b or args.compile_b or args.device_b:
            raise UsageError("--dtype-b/--autocast-b/--compile-b/--device-b need B to be a model")
        return args.b
    if args.autocast_b:
        if args.b is not None or args.dtype_b or args.compile_b or args.device_b:
            raise UsageError(
                "--autocast-b runs A itself under autocast; use it without B and other --*-b"
            )
        if not isinstance(a, nn.Module):
            raise UsageError("--autocast-b needs A to be a model")
        device = next(a.parameters(), torch.empty(0)).device.type
        return torch.autocast(device, dtype=parse_dtype(args.autocast_b))
    if args.b is not None:
        model: Any = load(args.b, args)
    elif isinstance(a, nn.Module):
        model = a if not (args.dtype_b or args.device_b) else copy.deepcopy(a)
    else:
        raise UsageError("A is a recording: give B as a MODEL_SPEC")
    if args.dtype_b:
        model = model.to(parse_dtype(args.dtype_b))
    if args.device_b:
        try:
            model = model.to(torch.device(args.device_b))
        except (RuntimeError, AssertionError) as exc:
            raise UsageError(f"--device-b {args.device_b!r}: {exc}") from None
    if args.compile_b:
        model = torch.compile(model)
    return model


def run(args: argparse.Namespace) -> int:
    """Compare, print (or write) the result; 1 when a module is outside the tolerance."""
    if args.rtol < 0 or args.atol < 0:
        raise UsageError(f"--rtol and --atol must be >= 0, got {args.rtol} and {args.atol}")
    if args.output is not None:
        check_writable(args.output, "-o")
    a: Any = args.a if is_recording(args.a) else load(args.a, args)
    b = _side_b(args, a)
    positional, keywords = model_inputs(args)
    if not positional and not keywords and not (is_recording(args.a) or is_recording(args.b or "")):
        raise UsageError("give --input-size SHAPE, --input-ids SHAPE or --input NAME=SHAPE")
    mode: Mode = "isolate" if args.isolate else "propagate"
    options = {"backward": args.backward, "match": args.match, "rtol": args.rtol, "atol": args.atol}
    result = compare(a, b, *positional, mode=mode, **options, **keywords)
    out: Path | None = args.output
    if out is not None and out.suffix.lower() in (".html", ".htm"):
        from hookscope.viz.compare import write_comparison_report

        shown = [result.to_dict()]
        if not args.backward:  # the other mode too: how the error grows vs where it starts
            other: Mode = "propagate" if args.isolate else "isolate"
            try:
                shown.append(
                    compare(a, b, *positional, mode=other, **options, **keywords).to_dict()
                )
            except UsageError as exc:  # isolate needs B to be a model and A's module inputs
                print(f"note: no {other} comparison in the report: {exc}", file=sys.stderr)
        write_comparison_report(shown, out)
        print(result.render("table"))
        print(f"wrote {out}", file=sys.stderr)
    elif out is not None:
        write_text(out, result.render(args.format) + "\n", "-o")
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(result.render(args.format))
    return 1 if result.exceeded else 0
