"""Monitor overhead: plain forward vs hookscope.Monitor vs a naive ``.item()`` hook.

ResNet-50-shaped CNN (``hookscope.zoo.resnet50_like``), batch 8, CPU fp32,
every leaf module, inference forward (``torch.no_grad``). Each monitored
forward is followed by ``mon.step()`` (the one host transfer), which is
included. Every forward of a variant alternates with a forward of an
identical copy of the model that carries no hooks (in A B, B A order), so
both see the same machine; a repetition (4 monitored steps, or 10 for
``every=10``) gives the ratio of the summed times, and the median over
repetitions is reported. Wall time and process CPU time
are both reported.

Variants:

* plain again: the hooked model with no hooks, the noise floor of the ratios;
* hookscope defaults (on CPU, the one-pass native kernel);
* the same with eager PyTorch reductions (``native.set_enabled(False)``,
  what a machine without a C compiler gets);
* ``every=10``: 10 steps, one recorded;
* ``fused=True`` (``torch.compile``; with ``--device cuda`` only);
* the naive hook.

    .venv/bin/python benchmarks/monitor_overhead.py [--reps 7] [--batch 8] [--threads N] [--train] [--device cuda]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
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


def timed(fn: Callable[[], object]) -> tuple[float, float]:
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
    twin = copy.deepcopy(model)  # never hooked: the plain side of every pair
    x = torch.randn(args.batch, 3, 224, 224, device=device)

    def forward_of(net: nn.Module) -> Callable[[], None]:
        def forward() -> None:
            if args.train:
                net.zero_grad(set_to_none=True)
                net(x).sum().backward()
            else:
                with torch.no_grad():
                    net(x)
            if device.type == "cuda":
                torch.cuda.synchronize()

        return forward

    pair = Pair(forward_of(twin), forward_of(model))
    variants: dict[str, Callable[[], tuple[float, float]]] = {
        "plain again (noise floor)": lambda: pair.run(4),
        "hookscope defaults": lambda: pair.monitored(model, {}, 4),
        "hookscope eager reductions": lambda: pair.monitored(model, {}, 4, native_on=False),
        "hookscope every=10": lambda: pair.monitored(model, {"every": 10}, 10),
    }
    if device.type != "cpu":
        variants["hookscope fused=True"] = lambda: pair.monitored(model, {"fused": True}, 4)
        start = time.perf_counter()
        with hookscope.Monitor(model, keep=False, fused=True) as mon:
            pair.hooked()
            mon.step()
        print(f"fused=True one-time compile and first step: {time.perf_counter() - start:.1f} s")
    variants["naive .item()"] = lambda: pair.naive(model)
    print(f"native kernel: {native.why_unavailable() or 'in use'}")
    for run in variants.values():
        run()  # warm-up: the kernel is built and loaded on first use
    pair.plain_times.clear()
    ratios: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for _rep in range(args.reps):
        for label, run in variants.items():
            ratios[label].append(run())
    mode = "forward + backward" if args.train else "inference forward"
    print(
        f"ResNet-50-shaped, batch {args.batch}, {device} fp32, {torch.get_num_threads()} threads,"
    )
    print(f"{mode}; {args.reps} repetitions, medians of the per-repetition ratios")
    plain_wall = statistics.median(w for w, _ in pair.plain_times)
    plain_cpu = statistics.median(c for _, c in pair.plain_times)
    print(f"{'variant':<28}{'x plain (wall)':>16}{'x plain (cpu)':>15}")
    print(f"{'plain':<28}{f'1.00 ({plain_wall:.3f} s)':>16}{f'1.00 ({plain_cpu:.3f} s)':>15}")
    for label, values in ratios.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{label:<28}{wall:>16.3f}{cpu:>15.3f}")


class Pair:
    """Alternates forwards of the unhooked twin (``plain``) and the model under test (``hooked``)."""

    def __init__(self, plain: Callable[[], None], hooked: Callable[[], None]) -> None:
        self.plain, self.hooked = plain, hooked
        self.plain_times: list[tuple[float, float]] = []

    def run(self, steps: int, after: Callable[[], object] = lambda: None) -> tuple[float, float]:
        """(wall, cpu) ratios of ``steps`` hooked forwards (each followed by ``after``) to plain ones."""
        plain, hooked = [0.0, 0.0], [0.0, 0.0]
        for step in range(steps):
            if step % 2:  # alternate the order too: A B, B A, ...
                test = timed(lambda: (self.hooked(), after()))
                base = timed(self.plain)
            else:
                base = timed(self.plain)
                test = timed(lambda: (self.hooked(), after()))
            self.plain_times.append(base)
            for i in (0, 1):
                plain[i] += base[i]
                hooked[i] += test[i]
        return hooked[0] / plain[0], hooked[1] / plain[1]

    def monitored(
        self, model: nn.Module, options: dict[str, Any], steps: int, native_on: bool = True
    ) -> tuple[float, float]:
        native.set_enabled(native_on)
        try:
            with hookscope.Monitor(model, keep=False, **options) as mon:
                return self.run(steps, mon.step)
        finally:
            native.set_enabled(True)

    def naive(self, model: nn.Module) -> tuple[float, float]:
        handles = naive_hooks(model)
        try:
            return self.run(1)
        finally:
            for handle in handles:
                handle.remove()


if __name__ == "__main__":
    main()
