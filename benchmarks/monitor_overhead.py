"""Monitor overhead: plain forward vs hookscope.Monitor vs a naive ``.item()`` hook.

ResNet-50-shaped CNN (``hookscope.zoo.resnet50_like``), batch 8, CPU fp32,
every leaf module, inference forward (``torch.no_grad``). Each monitored
forward is followed by ``mon.step()`` (the one host transfer), which is
included. Every timing of a variant is paired with plain forwards run just
before it (as many as the variant runs), and the median of the per-pair
ratios is reported: steady even when other jobs share the machine and its
speed drifts. Wall time and process CPU time are both reported.

Variants:

* plain again: 10 plain forwards against 10, the noise floor of the ratios;
* hookscope defaults (on CPU, the one-pass native kernel);
* the same with eager PyTorch reductions (``native.set_enabled(False)``,
  what a machine without a C compiler gets);
* ``every=10``, amortised over 10 steps;
* ``fused=True`` (``torch.compile``; with ``--device cuda`` only);
* the naive hook.

    .venv/bin/python benchmarks/monitor_overhead.py [--reps 9] [--batch 8] [--threads N] [--train] [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import nn

import hookscope
from hookscope.stats import native
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
    parser.add_argument("--reps", type=int, default=9)
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

    # label -> (forwards per timing, the timed run)
    variants: dict[str, tuple[int, Callable[[], tuple[float, float]]]] = {
        "plain again (noise floor)": (10, lambda: timed(partial(_repeat, forward, 10))),
        "hookscope defaults": (1, lambda: _monitored(model, forward, {}, 1)),
        "hookscope eager reductions": (
            1,
            lambda: _monitored(model, forward, {}, 1, native_on=False),
        ),
        "hookscope every=10": (10, lambda: _monitored(model, forward, {"every": 10}, 10)),
    }
    if device.type != "cpu":
        variants["hookscope fused=True"] = (
            1,
            lambda: _monitored(model, forward, {"fused": True}, 1),
        )
        start = time.perf_counter()
        with hookscope.Monitor(model, keep=False, fused=True) as mon:
            forward()
            mon.step()
        print(f"fused=True one-time compile and first step: {time.perf_counter() - start:.1f} s")
    variants["naive .item()"] = (1, lambda: _naive(model, forward))
    print(f"native kernel: {native.why_unavailable() or 'in use'}")
    forward()  # warm-up
    for _runs, run in variants.values():
        run()  # warm-up: the kernel is built and loaded on first use
    plain: list[tuple[float, float]] = []
    ratios: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for _rep in range(args.reps):
        for label, (runs, run) in variants.items():
            base = timed(partial(_repeat, forward, runs))
            plain.append((base[0] / runs, base[1] / runs))
            wall, cpu = run()
            ratios[label].append((wall / base[0], cpu / base[1]))
    mode = "forward + backward" if args.train else "inference forward"
    print(
        f"ResNet-50-shaped, batch {args.batch}, {device} fp32, {torch.get_num_threads()} threads,"
    )
    print(f"{mode}; {args.reps} paired repetitions, medians")
    plain_wall = statistics.median(w for w, _ in plain)
    plain_cpu = statistics.median(c for _, c in plain)
    print(f"{'variant':<28}{'x plain (wall)':>16}{'x plain (cpu)':>15}")
    print(f"{'plain':<28}{f'1.00 ({plain_wall:.3f} s)':>16}{f'1.00 ({plain_cpu:.3f} s)':>15}")
    for label, values in ratios.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{label:<28}{wall:>16.3f}{cpu:>15.3f}")


def _monitored(
    model: nn.Module,
    forward: Callable[[], None],
    options: dict[str, Any],
    steps: int,
    native_on: bool = True,
) -> tuple[float, float]:
    """(wall, cpu) seconds of ``steps`` monitored forwards, each followed by ``step()``."""
    native.set_enabled(native_on)
    try:
        with hookscope.Monitor(model, keep=False, **options) as mon:

            def run() -> None:
                for _ in range(steps):
                    forward()
                    mon.step()

            return timed(run)
    finally:
        native.set_enabled(True)


def _repeat(fn: Callable[[], None], times: int) -> None:
    for _ in range(times):
        fn()


def _naive(model: nn.Module, forward: Callable[[], None]) -> tuple[float, float]:
    handles = naive_hooks(model)
    try:
        return timed(forward)
    finally:
        for handle in handles:
            handle.remove()


if __name__ == "__main__":
    main()
