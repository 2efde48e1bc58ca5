"""Entry point of the ``hookscope`` command.

Each subcommand lives in its own module exposing ``register(subparsers)``,
which adds a parser whose default ``func(args) -> int`` runs the command.
Exit codes: 0 ok, 1 findings or alerts, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hookscope import __version__
from hookscope.cli import (
    demo,
    doctor,
    featuremaps,
    hooks,
    lint,
    report,
    run,
    summary,
)
from hookscope.errors import HookscopeError

_COMMANDS = (summary, doctor, hooks, run, lint, featuremaps, report, demo)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="hookscope",
        description="Trustworthy PyTorch hooks: summary, doctor, monitor, pictures, lint.",
    )
    parser.add_argument("--version", action="version", version=f"hookscope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.func(args)
    except HookscopeError as exc:
        print(f"hookscope {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hookscope: interrupted", file=sys.stderr)
        return 130
    return code
