"""``hookscope run --doctor|--monitor [--out PATH] script.py [args...]``: run a script under hookscope.

The script runs like ``python script.py args...`` (or ``python -m module``
with ``-m``): same ``sys.argv``, ``__name__ == "__main__"``, and the exit
code is the script's (1 when it raises, with the traceback on stderr).

``--doctor`` watches every ``nn.Module`` the script runs for ``.forward()``
calls that skip the module's hooks and, at exit (also when the script raises
or calls ``sys.exit``), prints them grouped by call site to stderr;
``--out report.json`` writes them as JSON. ``--monitor --out DIR`` records
per-layer statistics of every model the script runs into DIR: full
statistics every ``--every`` steps (default 10), and on every other step an
exact NaN/Inf check, so the first NaN/Inf is still named at its step. With
both, ``--out`` is a directory and the doctor's report goes to ``DIR/doctor.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import runpy
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from hookscope import dist
from hookscope._files import check_writable
from hookscope.cli.scripts import run_path
from hookscope.doctor import BypassRecord, render_bypasses
from hookscope.errors import UsageError
from hookscope.hooks.bypass import BypassDetector

#: ``--every``'s default: a recorded step costs the full statistics in time and
#: disk, a checked one a NaN/Inf count per tensor; one in 10 keeps a 100,000-step
#: run's curves at 10,000 points and its files a tenth of full detail.
DEFAULT_EVERY = 10


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run",
        help="run a Python script under the doctor and/or the monitor",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # -D / -M: torchrun's own parser takes "--monitor" for an abbreviation of its
    # "--monitor-interval" and stops; these short flags pass through it (README).
    parser.add_argument(
        "-D", "--doctor", action="store_true", help="report direct .forward() calls"
    )
    parser.add_argument("-M", "--monitor", action="store_true", help="record per-layer statistics")
    parser.add_argument("--out", type=Path, metavar="PATH", help="JSON file (--doctor) or DIR")
    parser.add_argument(
        "--every",
        type=int,
        metavar="N",
        help=f"--monitor: full statistics every N steps, a NaN/Inf check on the others "
        f"(default {DEFAULT_EVERY})",
    )
    parser.add_argument("-m", dest="as_module", action="store_true", help="run a module")
    parser.add_argument("target", metavar="script.py", help="the script (or module with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the script; returns its exit code."""
    if not (args.doctor or args.monitor):
        raise UsageError("hookscope run needs --doctor and/or --monitor" + _misplaced(args))
    if args.monitor and args.out is None:
        raise UsageError("--monitor needs --out DIR (where the statistics go)" + _misplaced(args))
    if args.every is not None and not args.monitor:
        raise UsageError("--every needs --monitor")
    every = DEFAULT_EVERY if args.every is None else args.every
    if every < 1:
        raise UsageError(f"--every must be an int >= 1, got {every}")
    if not args.as_module and not Path(args.target).is_file():
        raise UsageError(f"script not found: {args.target!r}")
    if args.as_module and not _module_exists(args.target):
        raise UsageError(f"module not found: {args.target!r}")
    if args.monitor:
        if args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {str(args.out)!r} is a file; --monitor needs a directory")
        check_writable(args.out / "monitor.jsonl", "--out")  # not under a file either
    doctor_json = args.out
    if args.doctor and args.monitor:
        doctor_json = args.out / "doctor.json"
    if doctor_json is not None:
        doctor_json = dist.rank_file(doctor_json)  # doctor.rank1.json under torchrun
    with contextlib.ExitStack() as stack:
        if args.monitor:
            stack.enter_context(_monitor(args.out, every))
        detector = _doctor(stack) if args.doctor else None
        code = 0
        try:
            code = execute(args.target, args.args, as_module=args.as_module)
        except KeyboardInterrupt:
            code = 130  # what the shell reports for a Ctrl-C'd python
            raise
        finally:
            if detector is not None:
                detector.detach()
                _report(detector.records, args, code, doctor_json)
    return code


#: hookscope run's own options, as a user may type them after the script by mistake.
_OWN_OPTIONS = ("--out", "--doctor", "-D", "--monitor", "-M")


def _misplaced(args: argparse.Namespace) -> str:
    """A hint when hookscope's options came after the script, where they go to the script."""
    own = [a for a in ("--doctor", "--monitor") if getattr(args, a[2:])]
    given, rest = [], []
    tokens = iter(args.args)
    for token in tokens:
        name = token.split("=", 1)[0]
        if name not in _OWN_OPTIONS:
            rest.append(token)
            continue
        given.append(name)
        if token == "--out":
            own += [token, next(tokens, "DIR")]
        elif name not in own:
            own.append(token)
    if not given:
        return ""
    target = f"-m {args.target}" if args.as_module else args.target
    return (
        f"; {' '.join(given)} came after {target} and went to the script (everything after "
        "the script is the script's). Put hookscope's options first: "
        f"hookscope run {' '.join([*own, target, *rest])}"
    )


def _doctor(stack: contextlib.ExitStack) -> BypassDetector:
    detector = BypassDetector(None, policy="record")
    detector.attach_all()
    stack.callback(detector.detach)
    return detector


@contextlib.contextmanager
def _monitor(out_dir: Path, every: int) -> Iterator[None]:
    # Imported by name only when asked for: the monitor is optional here.
    try:
        script = importlib.import_module("hookscope.monitor.script")
    except ImportError as exc:
        raise UsageError(f"hookscope run --monitor is not available: {exc}") from None
    watcher = None
    try:
        with script.monitor_script(out_dir, every=every) as watcher:
            yield
    finally:
        if watcher is not None:  # closed: every file complete before the merged report
            _report_monitor(watcher, out_dir)


def _report_monitor(watcher: Any, out_dir: Path) -> None:
    """The end-of-run lines; under torchrun only rank 0 prints, after writing the merged report."""
    watcher.close()  # the last step is complete: count it
    rank, world_size = dist.where()
    if world_size > 1 and rank != 0:
        return  # every rank wrote its files; rank 0 says where they are
    files = ", ".join(str(path) for path in watcher.paths) or "nothing (no model was called)"
    if world_size > 1 and watcher.paths:
        files += f" (and the same for ranks 1-{world_size - 1})"
    rules = {"optimizer": "one per optimizer step", "forward": "one per forward (no optimizer)"}
    steps = "; ".join(
        f"{path.name}: {mon.step_index} step(s), {rules[rule]}"
        for path, mon, rule in zip(watcher.paths, watcher.monitors, watcher.rules, strict=True)
    )
    print(
        f"\nhookscope run --monitor: {len(watcher.monitors)} model(s) monitored, "
        f"{len(watcher.alerts)} alert(s); wrote {files}" + (f"\n  steps: {steps}" if steps else ""),
        file=sys.stderr,
    )
    if world_size > 1:
        _merged_report(out_dir, watcher.paths[:1])
    else:
        print(
            f"  HTML report: hookscope report {out_dir} -o {out_dir}/report.html", file=sys.stderr
        )


def _merged_report(out_dir: Path, paths: list[Path]) -> None:
    """Rank 0 of a torchrun job: wait for every rank's file, then write one report of all."""
    from hookscope.errors import HookscopeError
    from hookscope.sinks.jsonl import wait_closed
    from hookscope.viz.report import write_report

    if not paths:
        return
    name = paths[0].name.replace(".rank0.", ".rank{}.")
    expected = [paths[0].with_name(name.format(r)) for r in range(dist.world_size())]
    late = wait_closed(expected, min(dist.collective_timeout(), 120.0))
    try:
        result = write_report(out_dir, out_dir / "report.html")
    except HookscopeError as exc:
        print(f"hookscope run: no merged report ({exc})", file=sys.stderr)
        return
    missing = f" (not yet written: {', '.join(p.name for p in late)})" if late else ""
    print(f"  merged report of all ranks: {result.path}{missing}", file=sys.stderr)


def _report(
    records: list[BypassRecord], args: argparse.Namespace, code: int, out: Path | None
) -> None:
    total = sum(r.count for r in records)
    rank, world_size = dist.where()
    if rank == 0:  # under torchrun: one table (rank 0's); every rank writes its JSON
        where = f" (rank 0 of {world_size})" if world_size > 1 else ""
        print(
            f"\nhookscope run --doctor{where}: {len(records)} call site(s), {total} direct "
            f".forward() call(s) in {args.target}",
            file=sys.stderr,
        )
        if records:
            print(render_bypasses(records), file=sys.stderr)
        if out is not None and world_size > 1:
            print(f"  every rank's report: {out.with_name(out.name.replace('.rank0.', '.rank*.'))}",
                  file=sys.stderr)  # fmt: skip
    if out is None:
        return
    data = {
        "script": args.target,
        "argv": [args.target, *args.args],
        "exit_code": code,
        "bypasses": [r.to_dict() for r in records],
    }
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        print(f"hookscope run: cannot write {str(out)!r}: {exc.strerror}", file=sys.stderr)


def execute(target: str, argv: Sequence[str], *, as_module: bool = False) -> int:
    """Run a script (or module) as ``__main__`` with ``sys.argv``; returns its exit code."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    script = os.path.abspath(target)
    # As python does: argv[0] is the script path as given (for -m, runpy sets it).
    sys.argv = [target, *argv]
    # Like python: the script's folder, or for -m the working directory, comes first.
    sys.path.insert(0, os.getcwd() if as_module else os.path.dirname(script))
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            run_path(script)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except Exception as exc:
        _print_user_traceback(exc, script)
        return 1
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
    return 0


def _module_exists(name: str) -> bool:
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_user_traceback(exc: BaseException, script: str) -> None:
    """The traceback from the script's own frames on (runpy and hookscope frames dropped)."""
    tb: TracebackType | None = exc.__traceback__
    while tb is not None and not _is_user_frame(tb, script):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__, file=sys.stderr)


def _is_user_frame(tb: TracebackType, script: str) -> bool:
    filename = tb.tb_frame.f_code.co_filename
    if filename == script:
        return True
    internal = filename.startswith(("<frozen runpy", runpy.__file__)) or filename.startswith(
        os.path.dirname(os.path.dirname(__file__))
    )
    return not internal
