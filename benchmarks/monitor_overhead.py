"""Monitor overhead: plain forward vs hookscope.Monitor vs a naive ``.item()`` hook.

ResNet-50-shaped CNN (``hookscope.zoo.resnet50_like``), batch 8, CPU fp32,
every leaf module, inference forward (``torch.no_grad``). Variants run
interleaved, repetition by repetition; the median of each is reported as a
ratio to the plain forward, both for wall-clock time and for process CPU
time (steadier when other jobs share the machine). Each monitored forward is
followed by ``mon.step()`` (the one host transfer), which is included.
``fused=True`` is compiled once before timing; the compile time is printed.

    .venv/bin/python benchmarks/monitor_overhead.py [--reps 7] [--batch 8] [--threads N] [--train] [--device cuda]
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


def timed(fn: Callable[[], None]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: default)")
    parser.add_argument(
        "--train", action="store_true", help="forward + backward (gradient statistics too)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = resnet50_like().eval().to(device)
    x = torch.randn(args.batch, 3, 224, 224, device=device)

    def forward() -> None:
        if args.train:
            model.zero_grad(set_to_none=True)
            model(x).sum().backward()
        else:
            with torch.no_grad():
                model(x)
        if device.type == "cuda":
            torch.cuda.synchronize()

    monitors: dict[str, dict[str, Any]] = {
        "hookscope defaults": {},
        "hookscope every=10": {"every": 10},
        "hookscope fused=True": {"fused": True},
    }
    times: dict[str, list[tuple[float, float]]] = {
        "plain": [],
        **{k: [] for k in monitors},
        "naive .item()": [],
    }
    forward()  # warm-up
    start = time.perf_counter()
    with hookscope.Monitor(model, keep=False, fused=True) as mon:
        forward()
        mon.step()
    print(f"fused=True one-time compile and first step: {time.perf_counter() - start:.1f} s")
    for _rep in range(args.reps):
        times["plain"].append(timed(forward))
        for label, options in monitors.items():
            with hookscope.Monitor(model, keep=False, **options) as mon:
                runs = mon.every
                wall, cpu = timed(lambda m=mon, n=runs: _monitored(forward, m, n))
                times[label].append((wall / runs, cpu / runs))
        handles = naive_hooks(model)
        try:
            times["naive .item()"].append(timed(forward))
        finally:
            for handle in handles:
                handle.remove()
    plain_wall = statistics.median(w for w, _ in times["plain"])
    plain_cpu = statistics.median(c for _, c in times["plain"])
    mode = "forward + backward" if args.train else "inference forward"
    print(
        f"ResNet-50-shaped, batch {args.batch}, {device} fp32, {torch.get_num_threads()} threads,"
    )
    print(mode)
    print(f"{'variant':<26}{'wall s':>9}{'x plain':>9}{'cpu s':>9}{'x plain':>9}")
    for label, values in times.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{label:<26}{wall:>9.3f}{wall / plain_wall:>9.2f}{cpu:>9.3f}{cpu / plain_cpu:>9.2f}")


def _monitored(forward: Callable[[], None], mon: hookscope.Monitor, runs: int) -> None:
    for _ in range(runs):
        forward()
        mon.step()


if __name__ == "__main__":
    main()
