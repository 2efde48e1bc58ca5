"""``hookscope demo``: everything on a built-in CNN with synthetic data, no downloads.

Prints the model summary, trains ``SmallCNN(plant_bypass=True)`` for a few
steps under a `hookscope.Monitor` (JSONL + TensorBoard), runs the doctor
(which finds the planted ``self.head.forward(x)`` bypass), draws feature
maps, and writes a self-contained HTML report. Everything goes to ``--out``
(default ``runs/demo``).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.markup import escape

import hookscope
from hookscope.errors import MissingExtraError, UsageError
from hookscope.viz.featuremaps import write_feature_maps
from hookscope.viz.report import write_report
from hookscope.zoo import SmallCNN

#: What the demo writes into ``--out`` (removed first, so reruns start clean).
_OUTPUTS = (
    "monitor",
    "monitor.jsonl",
    "summary.json",
    "doctor.json",
    "featuremaps",
    "tensorboard",
    "report.html",
)


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="everything on a built-in model, no downloads", description=__doc__
    )
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    parser.add_argument("--batch", type=int, default=16, help="batch size (default 16)")
    parser.add_argument("--out", default="runs/demo", help="output folder (default runs/demo)")
    parser.set_defaults(func=run)


def synthetic_batch(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` 3x32x32 images of oriented stripes; the label (0-9) is the orientation.

    Class ``k`` has stripes at ``18 * k`` degrees, a random phase and colour,
    and Gaussian noise: easy enough to learn in a few steps, and the feature
    maps show edge detectors rather than noise.
    """
    labels = torch.randint(0, 10, (n,), generator=generator)
    coords = torch.linspace(-1.0, 1.0, 32)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    angle = labels.float() * (math.pi / 10)
    phase = torch.rand(n, generator=generator) * 2 * math.pi
    along = xx * torch.cos(angle).view(-1, 1, 1) + yy * torch.sin(angle).view(-1, 1, 1)
    stripes = torch.sin(along * 12 + phase.view(-1, 1, 1))
    colour = 0.5 + torch.rand(n, 3, 1, 1, generator=generator)
    noise = 0.3 * torch.randn(n, 3, 32, 32, generator=generator)
    return stripes.unsqueeze(1) * colour + noise, labels


class _Demo:
    """One demo run: the console, the output folder, and which parts were skipped."""

    def __init__(self, out: Path, console: Console) -> None:
        self.out = out
        self.console = console
        self.skipped: list[str] = []
        self.seconds: dict[str, float] = {}

    def part(self, name: str, action: Callable[[], Any]) -> Any:
        """Run one part; a part whose optional extra is missing is skipped, and said so."""
        started = time.perf_counter()
        try:
            return action()
        except ImportError as exc:  # MissingExtraError names the extra to install
            self.skip(name, str(exc))
            return None
        finally:
            self.seconds[name] = time.perf_counter() - started

    def skip(self, name: str, why: str) -> None:
        """Note a skipped part; ``why`` is printed as is (``[plots]`` is not markup)."""
        self.skipped.append(f"{name} ({why})")
        self.console.print(f"[yellow]skipped {escape(name)}: {escape(why)}[/yellow]")

    def rule(self, title: str) -> None:
        self.console.rule(f"[bold]{title}")


def _summary(demo: _Demo, model: torch.nn.Module) -> None:
    summary = hookscope.summary(model, input_size=(1, 3, 32, 32))
    demo.console.print(str(summary), highlight=False, markup=False)
    (demo.out / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2, default=str))


def _train(demo: _Demo, model: torch.nn.Module, steps: int, batch: int) -> None:
    from hookscope.sinks import Sink, StoreSink, TensorBoardSink

    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    sinks: list[Sink] = [StoreSink(demo.out / "monitor")]  # the run store: needs no extra
    try:
        sinks.append(TensorBoardSink(demo.out / "tensorboard"))
    except MissingExtraError as exc:
        demo.skip("TensorBoard logs", str(exc))
    with hookscope.Monitor(model, sinks=sinks) as mon:
        for step in range(steps):
            x, y = synthetic_batch(batch, generator)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            mon.step()
            if step % max(1, steps // 6) == 0 or step == steps - 1:
                demo.console.print(f"step {step:3d}  loss {loss.item():.3f}")
        alerts = list(mon.alerts)
        first = mon.first_nonfinite
    demo.console.print(f"monitor: {len(alerts)} alert(s); first non-finite: {first or 'none'}")


def _doctor(demo: _Demo, model: torch.nn.Module) -> None:
    x, _ = synthetic_batch(2, torch.Generator().manual_seed(1))
    report = hookscope.doctor(model, x)
    demo.console.print(str(report), highlight=False, markup=False)
    (demo.out / "doctor.json").write_text(json.dumps(report.to_dict(), indent=2, default=str))
    for bypass in report.bypasses:
        name = getattr(bypass, "module", None) or getattr(bypass, "name", bypass)
        demo.console.print(
            f"[bold red]found the planted bypass:[/bold red] {name} — its hooks never run; "
            "call the module, not .forward()"
        )


def _featuremaps(demo: _Demo, model: torch.nn.Module) -> None:
    x, _ = synthetic_batch(1, torch.Generator().manual_seed(2))
    model.eval()
    with torch.no_grad(), hookscope.capture(model, torch.nn.Conv2d) as cache:
        model(x)
        written, _ = write_feature_maps(cache, demo.out / "featuremaps", top_k=16)
    model.train()
    demo.console.print(f"feature maps: {', '.join(str(p) for p in written)}")


def run(args: argparse.Namespace) -> int:
    """Run the demo and print where everything is."""
    if args.steps < 1 or args.batch < 1:
        raise UsageError(
            f"--steps and --batch must be at least 1, got {args.steps} and {args.batch}"
        )
    console = Console(highlight=False, soft_wrap=True)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} is a file; the demo needs a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {str(out)!r}: {exc.strerror}") from None
    for name in _OUTPUTS:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    demo = _Demo(out, console)
    started = time.perf_counter()
    torch.manual_seed(0)
    model = SmallCNN(plant_bypass=True)

    demo.rule("1. model summary")
    demo.part("summary", lambda: _summary(demo, model))
    demo.rule(f"2. training {args.steps} steps under hookscope.Monitor")
    demo.part("monitor", lambda: _train(demo, model, args.steps, args.batch))
    demo.rule("3. doctor: hooks that silently do not fire")
    demo.part("doctor", lambda: _doctor(demo, model))
    demo.rule("4. feature maps")
    demo.part("feature maps", lambda: _featuremaps(demo, model))
    demo.rule("5. report")
    demo.part(
        "report", lambda: write_report(out, out / "report.html", title="hookscope demo: SmallCNN")
    )
    _print_where(demo, out / "report.html", time.perf_counter() - started)
    return 0


def _print_where(demo: _Demo, report: Path, seconds: float) -> None:
    print = demo.console.print
    parts = ", ".join(f"{name} {sec:.1f}" for name, sec in demo.seconds.items())
    print(f"done in {seconds:.1f} s ({parts}); everything is in {demo.out}/")
    if _written(report):
        print(f"  {'report:':<21}{report}  (open file://{report.resolve()} in a browser)")
    for name, what in (
        ("monitor", "per-step statistics"),
        ("summary.json", "model summary"),
        ("doctor.json", "doctor findings"),
        ("featuremaps", "feature-map PNGs"),
    ):
        if _written(demo.out / name):
            print(f"  {what + ':':<21}{demo.out / name}")
    if _written(demo.out / "tensorboard"):
        print(f"  {'TensorBoard logs:':<21}tensorboard --logdir {demo.out / 'tensorboard'}")
    if demo.skipped:
        print("[yellow]skipped:[/yellow] " + escape("; ".join(demo.skipped)))


def _written(path: Path) -> bool:
    """A non-empty file, or a folder holding one: what a user can open."""
    if path.is_dir():
        return any(_written(child) for child in path.iterdir())
    return path.is_file() and path.stat().st_size > 0
