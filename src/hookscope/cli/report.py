"""``hookscope report RUN_DIR``: one self-contained HTML file from a monitor run directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hookscope._files import check_writable
from hookscope.viz.report import write_report


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="self-contained HTML report of a monitor run directory",
        description=__doc__,
    )
    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="folder with the run store monitor/ (or monitor.jsonl) and optional summary.json, "
        "doctor.json, featuremaps/, tensorboard/",
    )
    parser.add_argument(
        "-o", "--output", help="HTML file to write (default RUN_DIR/report.html)", default=None
    )
    parser.add_argument("--title", default="hookscope report", help="page title")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report and say what it holds and what was absent."""
    if args.output is not None:
        check_writable(args.output, "-o")
    result = write_report(Path(args.run_dir), args.output, title=args.title)
    print(f"wrote {result.path} ({result.path.stat().st_size:,} bytes)")
    if result.missing:
        print(f"absent from {args.run_dir}: {', '.join(result.missing)}")
    for note in result.notes:
        print(f"note: {note}")
    print(f"open it in a browser: file://{result.path.resolve()}")
    return 0
