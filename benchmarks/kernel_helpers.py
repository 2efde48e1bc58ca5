"""The kernel's helper policy, same run: time inside the kernel per monitored forward.

Every forward runs under a `hookscope.Monitor` (defaults); the policy
(`hookscope.stats.native.set_helpers`: ``auto``, ``always``, ``never``)
changes from one forward to the next, in alternating order, so all three
see the same machine. Printed: the median time spent in the kernel's
calls per forward (first and third quartile) and the median forward::

    .venv/bin/python benchmarks/kernel_helpers.py --model resnet50 --busy 2 --forwards 10
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/kernel_helpers.py --model gpt2 --busy 0
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
import monitor_overhead

import hookscope
from hookscope.stats import native

POLICIES = ("auto", "always", "never")


def timed_kernel(spent: list[float]) -> None:
    """Add the wall time of every kernel call to ``spent[0]``."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return call

    native.moments = wrap(native.moments)  # type: ignore[assignment]
    native.moments_relu = wrap(native.moments_relu)  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet50", "gpt2"], default="resnet50")
    parser.add_argument("--busy", type=int, default=0, help="competing busy processes")
    parser.add_argument("--forwards", type=int, default=10, help="forwards per policy")
    args = parser.parse_args()
    if not native.available():
        sys.exit(f"kernel unavailable: {native.why_unavailable()}")
    model, x = monitor_overhead.build(args.model, None, torch.device("cpu"))
    spent = [0.0]
    timed_kernel(spent)
    kernel: dict[str, list[float]] = {p: [] for p in POLICIES}
    forward: dict[str, list[float]] = {p: [] for p in POLICIES}
    print(f"load average before: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    with monitor_overhead.busy(args.busy), hookscope.Monitor(model, keep=False) as mon:
        for _ in range(2):  # warm-up; the ReLU pass learns its pairs
            with torch.no_grad():
                model(x)
            mon.step()
        for i in range(args.forwards):
            for policy in POLICIES if i % 2 == 0 else POLICIES[::-1]:
                native.set_helpers(policy)
                spent[0] = 0.0
                start = time.perf_counter()
                with torch.no_grad():
                    model(x)
                forward[policy].append(time.perf_counter() - start)
                mon.step()
                kernel[policy].append(spent[0])
    native.set_helpers("auto")
    print(f"load average after: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"{args.model}, {args.busy} busy processes, {torch.get_num_threads()} torch threads")
    print(f"{'policy':<8}{'kernel ms/forward (q1-q3)':>30}{'forward ms':>12}")
    for policy in POLICIES:
        q1, median, q3 = statistics.quantiles(kernel[policy])
        spread = f"{median * 1e3:.1f} ({q1 * 1e3:.1f}-{q3 * 1e3:.1f})"
        print(f"{policy:<8}{spread:>30}{statistics.median(forward[policy]) * 1e3:>12.0f}")


if __name__ == "__main__":
    main()
