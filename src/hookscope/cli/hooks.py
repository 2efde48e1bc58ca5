"""``hookscope hooks MODEL_SPEC``: the inventory of every hook on a model."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from hookscope.hooks import HookInventory, list_hooks
from hookscope.modelspec import load_model, parse_kwargs


def register(subparsers: Any) -> None:
    """Add the ``hooks`` subcommand."""
    parser = subparsers.add_parser("hooks", help="list every hook on a model", description=__doc__)
    parser.add_argument("model", metavar="MODEL_SPEC", help="package.module:fn or file.py:fn")
    parser.add_argument("--kwargs", help="JSON object of keyword arguments for the factory")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(func=run)


def render_inventory(inventory: HookInventory) -> Table:
    """The inventory as a rich table."""
    table = Table(title=f"{len(inventory)} hook(s)")
    for column in ("module", "kind", "hook", "source", "by hookscope"):
        # Wrap a long cell onto more lines, never cut it with an ellipsis.
        table.add_column(column, overflow="fold")
    for info in inventory:
        table.add_row(
            ", ".join(info.names) or "(root)",
            info.kind,
            info.hook,
            info.source or "?",
            "yes" if info.by_hookscope else "no",
        )
    return table


def run(args: argparse.Namespace) -> int:
    """Print the inventory."""
    model = load_model(args.model, parse_kwargs(args.kwargs))
    inventory = list_hooks(model)
    if args.format == "json":
        print(json.dumps(inventory.to_dicts(), indent=2))
    else:
        table = render_inventory(inventory)
        console = Console()
        if not console.is_terminal:
            # Pipes and CI logs have no width: lay the table out at its natural
            # width so every file:line stays whole on one line.
            natural = Console(width=1 << 20).measure(table).maximum
            console = Console(width=max(80, natural), highlight=False)
        console.print(table)
    return 0
