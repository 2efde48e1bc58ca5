"""Entry point of the ``hookscope`` command.

Each subcommand lives in its own module exposing ``register(subparsers)``,
which adds a parser whose default ``func(args) -> int`` runs the command.
Exit codes: 0 ok, 1 findings or alerts, 2 usage or input error.

Only the module of the command being run is imported, so ``hookscope lint``
never pays for importing torch; ``hookscope --help`` imports them all.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from hookscope import __version__
from hookscope.errors import HookscopeError

_COMMANDS: tuple[str, ...] = ("summary", "doctor", "hooks", "run", "lint", "featuremaps", "report")
_COMMANDS += ("demo", "compare", "record")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (``--help`` still shows the usage).

    An unknown option is reported by the subcommand it was given to, with the
    closest option of that subcommand (``hookscope run --moniter``: did you
    mean --monitor? see hookscope run --help); an unknown subcommand gets the
    closest command.
    """

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self._command_parser(parsed)
            parser.error(f"unrecognized arguments: {' '.join(extras)}{parser._closest(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        if "invalid choice:" in message:
            message += self._closest_choice(message)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _command_parser(self, parsed: argparse.Namespace) -> _Parser:
        """The parser of the subcommand in ``parsed`` (this one when there is none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, _Parser):
                    return chosen
        return self

    def _closest(self, extras: Sequence[str]) -> str:
        """``"; did you mean --monitor?"`` for the first unknown option with a close match."""
        options = list(self._option_string_actions)
        for extra in extras:
            if not extra.startswith("-"):
                continue
            match = difflib.get_close_matches(extra.split("=", 1)[0], options, n=1, cutoff=0.6)
            if match:
                return f"; did you mean {match[0]}?"
        return ""

    def _closest_choice(self, message: str) -> str:
        """``"; did you mean 'run'?"`` for argparse's "invalid choice: 'rn' (choose from ...)"."""
        given = message.split("invalid choice:", 1)[1].split("(", 1)[0].strip().strip("'")
        for action in self._actions:
            if action.choices is not None and not isinstance(action.choices, range):
                names = [str(choice) for choice in action.choices]
                match = difflib.get_close_matches(given, names, n=1, cutoff=0.6)
                if match and given not in names:
                    return f"; did you mean {match[0]!r}?"
        return ""


def build_parser(only: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every subcommand, or just those in ``only``."""
    parser = _Parser(
        prog="hookscope",
        description="Trustworthy PyTorch hooks: summary, doctor, monitor, pictures, lint.",
    )
    parser.add_argument("--version", action="version", version=f"hookscope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS if only is None else only:
        importlib.import_module(f"hookscope.cli.{name}").register(subparsers)
    return parser


def _needed_commands(argv: Sequence[str]) -> Sequence[str] | None:
    """The subcommands this command line needs (None: all, for help and errors)."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    if first in _COMMANDS:
        return (first,)
    if first is None and "--version" in argv:
        return ()
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_needed_commands(arguments))
    args = parser.parse_args(arguments)
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
    except BrokenPipeError:
        # the reader went away (`hookscope lint . | head`): stop quietly, as a
        # program killed by SIGPIPE would, and let no later flush fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    return code


def entry() -> NoReturn:
    """The ``hookscope`` program (console script, ``python -m hookscope``): `main`, then exit.

    After ``hookscope lint`` the process ends at once, its output flushed: the
    interpreter's own exit would walk and free the linter's class index object by
    object (about a million objects, 30-50 ms on a big tree) for nothing. Other
    commands run user code, whose finalizers must run, and exit normally.

    ``hookscope lint`` also runs without the cyclic garbage collector from the start:
    the linter pauses it anyway (see `hookscope.lint.engine.runner`), and its imports and file
    discovery would otherwise pay ~28 collections (~5 ms) for garbage that never comes.
    """
    lint = _needed_commands(sys.argv[1:]) == ("lint",)
    if lint:
        gc.disable()
    code = main()
    if lint:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
