"""``hookscope doctor``. Placeholder until its issue lands."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser = subparsers.add_parser("doctor", help="(not implemented yet)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Not implemented yet."""
    print("hookscope doctor: not implemented yet", file=sys.stderr)
    return 2
