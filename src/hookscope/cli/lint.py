"""``hookscope lint``. Placeholder until its issue lands."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``lint`` subcommand."""
    parser = subparsers.add_parser("lint", help="(not implemented yet)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Not implemented yet."""
    print("hookscope lint: not implemented yet", file=sys.stderr)
    return 2
