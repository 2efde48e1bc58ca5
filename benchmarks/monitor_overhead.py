"""Monitor overhead: plain forward vs hookscope.Monitor vs a naive ``.item()`` hook.

ResNet-50-shaped CNN (``hookscope.zoo.resnet50_like``), batch 8, CPU fp32,
every leaf module, inference forward (``torch.no_grad``). Variants run
interleaved, repetition by repetition; the median of each is reported as a
ratio to the plain forward. Each monitored forward is followed by
``mon.step()`` (the one host transfer), which is included in the time.

    .venv/bin/python benchmarks/monitor_overhead.py [--reps 7] [--batch 8]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import hookscope
from hookscope.zoo import resnet50_like


def naive_hooks(model: nn.Module) -> list[Any]:
    """What many tutorials do: six ``.item()`` calls per layer and forward."""
    stats: list[tuple[float, ...]] = []

    def hook(_module: nn.Module, _args: Any, out: Any) -> None:
        if isinstance(out, torch.Tensor) and out.is_floating_point():
            stats.append(
                (
                    out.mean().item(),
                    out.std().item(),
                    out.min().item(),
                    out.max().item(),
                    torch.isnan(out).sum().item(),
                    torch.isinf(out).sum().item(),
                )
            )

    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    return [m.register_forward_hook(hook) for m in leaves]


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = resnet50_like().eval()
    x = torch.randn(args.batch, 3, 224, 224)

    def forward() -> None:
        with torch.no_grad():
            model(x)

    monitors: dict[str, dict[str, Any]] = {
        "hookscope defaults": {},
        "hookscope every=10": {"every": 10},
        "hookscope stats=mean,std": {"stats": ["mean", "std"]},
    }
    times: dict[str, list[float]] = {"plain": [], **{k: [] for k in monitors}, "naive .item()": []}
    forward()  # warm-up
    for _rep in range(args.reps):
        times["plain"].append(timed(forward))
        for label, options in monitors.items():
            with hookscope.Monitor(model, keep=False, **options) as mon:
                runs = mon.every
                elapsed = timed(lambda m=mon, n=runs: _monitored(forward, m, n))
                times[label].append(elapsed / runs)
        handles = naive_hooks(model)
        try:
            times["naive .item()"].append(timed(forward))
        finally:
            for handle in handles:
                handle.remove()
    plain = statistics.median(times["plain"])
    print(f"ResNet-50-shaped, batch {args.batch}, CPU fp32, {torch.get_num_threads()} threads")
    print(f"{'variant':<28}{'median s':>10}{'x plain':>10}")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"{label:<28}{median:>10.3f}{median / plain:>10.2f}")


def _monitored(forward: Callable[[], None], mon: hookscope.Monitor, runs: int) -> None:
    for _ in range(runs):
        forward()
        mon.step()


if __name__ == "__main__":
    main()
