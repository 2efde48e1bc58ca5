"""``hookscope demo``: the main job on a built-in model, with no downloads."""

from __future__ import annotations

import argparse
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

import hookscope
from hookscope.cli.hooks import render_inventory
from hookscope.zoo import SmallCNN


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="run hookscope on a built-in example model", description=__doc__
    )
    parser.add_argument("--steps", type=int, default=5, help="training steps (default 5)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Train a small CNN for a few steps inside a hook session and report what fired."""
    console = Console()
    torch.manual_seed(0)
    model = SmallCNN(plant_bypass=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with hookscope.session(model, on_error="warn") as s:
        s.add_forward_hook(lambda name, module, args, output: None, leaves_only=True)
        console.print(render_inventory(hookscope.list_hooks(model)))
        for _ in range(args.steps):
            x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        table = Table(title=f"forward hook firings over {args.steps} steps")
        table.add_column("module")
        table.add_column("fired", justify="right")
        for name, counts in s.fired.items():
            table.add_row(name, str(sum(counts.values())))
        console.print(table)
    console.print(f"hooks left on the model after the session: {len(hookscope.list_hooks(model))}")
    return 0
