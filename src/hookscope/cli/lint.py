"""``hookscope lint PATH...``: find hook-bypassing calls and hook misuse; ``--fix`` them.

Exit codes: 0 clean, 1 findings (or, with ``--diff``, changes to make), 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hookscope.errors import UsageError
from hookscope.lint import FileFix, LintRun, fix, lint_run, render
from hookscope.lint.engine.fixes import write_fix
from hookscope.lint.engine.formats import FORMATS, to_text_path
from hookscope.lint.engine.runner import Progress

_PROGRESS_MIN_FILES = 200


def register(subparsers: Any) -> None:
    """Add the ``lint`` subcommand."""
    parser = subparsers.add_parser(
        "lint", help="find .forward() calls that skip hooks, and hook misuse", description=__doc__
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (.py, .cs)")
    parser.add_argument("--select", help="comma-separated codes or prefixes to run, e.g. HS1,HS201")
    parser.add_argument("--ignore", help="comma-separated codes or prefixes to skip")
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    parser.add_argument("--fix", action="store_true", help="rewrite fixable findings in place")
    parser.add_argument(
        "--diff", action="store_true", help="print the fixes as a diff, write nothing"
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=_jobs,
        default=None,
        help="processes in all, this one included (0 = one per CPU)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="skip matching files/folders (repeatable)",
    )
    parser.add_argument(
        "--config", metavar="PYPROJECT", help="read [tool.hookscope.lint] from this file"
    )
    parser.add_argument("--no-config", action="store_true", help="ignore pyproject.toml settings")
    parser.add_argument(
        "--max-file-size",
        type=_positive,
        metavar="BYTES",
        help="files larger than this are reported (HS000), not read (default: 10000000)",
    )
    parser.set_defaults(func=run)


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs must be an integer >= 0, got {value!r}") from None
    if jobs < 0:
        raise argparse.ArgumentTypeError(f"--jobs must be an integer >= 0, got {value!r}")
    return jobs


def _positive(value: str) -> int:
    try:
        size = int(value)
    except ValueError:
        size = 0
    if size <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of bytes > 0, got {value!r}")
    return size


def _codes(value: str | None) -> list[str] | None:
    return [c.strip() for c in value.split(",") if c.strip()] if value is not None else None


def run(args: argparse.Namespace) -> int:
    """Lint, optionally fix, and print the findings."""
    if args.fix and args.diff:
        raise UsageError(
            "--fix and --diff exclude each other: --diff only shows what --fix would write"
        )
    config: bool | str = False if args.no_config else (args.config or True)
    options: dict[str, Any] = {
        "select": _codes(args.select),
        "ignore": _codes(args.ignore),
        "exclude": args.exclude,
        "jobs": args.jobs,
        "config": config,
        "max_file_size": args.max_file_size,
    }
    with _progress_bar() as progress:
        result = lint_run(args.paths, progress=progress, **options)
    if args.diff:
        diffs = [f.diff() for f in _fixes(result) if f.fixed != f.original]
        sys.stdout.write("".join(diffs))
        return 1 if diffs else 0
    if args.fix:
        written: set[str] = set()  # a link and its target in one run: the file is fixed once
        fixed = sum(_write(f, written) for f in _fixes(result) if f.fixed != f.original)
        print(f"fixed {fixed} finding(s)", file=sys.stderr)
        result = lint_run(args.paths, **options)
    _print(result.findings, args.format)
    return 1 if result.findings else 0


def _fixes(result: LintRun) -> list[FileFix]:
    """The fixes of ``result``; a file that cannot be fixed is named and skipped."""
    fixes = fix(result)
    for file_fix in fixes:
        if file_fix.error:
            print(f"cannot fix {to_text_path(file_fix.path)}: {file_fix.error}", file=sys.stderr)
    return [f for f in fixes if not f.error]


def _write(file_fix: FileFix, written: set[str]) -> int:
    """Write one fixed file atomically (never half-written, a link's target rather than
    the link); the number of fixes, or 0 (also for a file already written)."""
    if os.path.realpath(file_fix.path) in written:
        return 0
    try:
        written.add(write_fix(file_fix))
    except (OSError, UnicodeEncodeError) as exc:
        print(f"cannot fix {to_text_path(file_fix.path)}: {exc}", file=sys.stderr)
        return 0
    return file_fix.applied


def _print(findings: list[Any], fmt: str) -> None:
    text = render(findings, fmt)
    if text:
        print(text)
    if fmt == "text":
        fixable = sum(1 for f in findings if f.fixable)
        summary = f"{len(findings)} finding(s)" + (
            f", {fixable} fixable with --fix" if fixable else ""
        )
        print(summary if findings else "no findings", file=sys.stderr)


@contextmanager
def _progress_bar() -> Iterator[Progress | None]:
    """A rich progress bar on stderr when it is a terminal and the tree is big."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    tasks: dict[str, Any] = {}

    def update(phase: str, done: int, total: int) -> None:
        if total < _PROGRESS_MIN_FILES and phase == "index":
            return
        if phase not in tasks:
            tasks[phase] = bar.add_task(phase, total=total)
        bar.update(tasks[phase], completed=done)

    with bar:
        yield update
