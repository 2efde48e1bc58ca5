"""Bypass detection overhead on a ResNet-50-shaped CNN (batch 8, CPU, fp32, forward).

Compares, in the same run, with repetitions interleaved and medians taken:
  plain      the model's forward, nothing attached
  hookscope  inside ``hookscope.session(model, detect_bypass=True)``
  tracking   the doctor's mode (also counts runs, grad mode, output grad)
  setprofile the generic alternative: a ``sys.setprofile`` tracer that checks
             every Python call for a ``forward`` not called from ``_call_impl``

Usage: .venv/bin/python benchmarks/bypass_overhead.py [--reps 7] [--batch 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch import nn

import hookscope
from hookscope.hooks.bypass import BypassDetector
from hookscope.zoo import resnet50_like

_CALL_IMPL = nn.Module._call_impl.__code__


def _profile_tracer(found: list[str]) -> Callable[[FrameType, str, Any], None]:
    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "forward":
            back = frame.f_back
            if back is not None and back.f_code.co_name not in ("_call_impl", "inner"):
                found.append(f"{back.f_code.co_filename}:{back.f_lineno}")

    return tracer


def _time(fn: Callable[[], object]) -> float:
    # CPU time of this process: robust to other processes competing for the CPU.
    start = time.process_time()
    fn()
    return time.process_time() - start


def _per_call_cost(reps: int) -> tuple[float, float]:
    """Seconds per module call: plain vs detect_bypass, on 2000 tiny Identity calls."""
    tiny = nn.Sequential(*[nn.Identity() for _ in range(2000)])
    x = torch.zeros(1)
    plain, probed = [], []
    for _ in range(reps):
        plain.append(_time(lambda: tiny(x)))
        with hookscope.session(tiny, detect_bypass=True):
            probed.append(_time(lambda: tiny(x)))
    return statistics.median(plain) / 2000, statistics.median(probed) / 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = resnet50_like().eval()
    x = torch.randn(args.batch, 3, 224, 224)

    def plain() -> None:
        with torch.no_grad():
            model(x)

    def with_session() -> None:
        with hookscope.session(model, detect_bypass=True), torch.no_grad():
            model(x)

    def with_tracking() -> None:
        detector = BypassDetector(model, track=True)
        detector.attach()
        try:
            with torch.no_grad():
                model(x)
        finally:
            detector.detach()

    def with_setprofile() -> None:
        found: list[str] = []
        sys.setprofile(_profile_tracer(found))
        try:
            with torch.no_grad():
                model(x)
        finally:
            sys.setprofile(None)

    variants = {
        "plain": plain,
        "hookscope": with_session,
        "tracking": with_tracking,
        "setprofile": with_setprofile,
    }
    for fn in variants.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, fn in variants.items():
            times[name].append(_time(fn))
    base = statistics.median(times["plain"])
    counter = BypassDetector(model, track=True)
    counter.attach()
    with torch.no_grad():
        model(x)
    counter.detach()
    calls = sum(a.calls for a in counter.activity.values())  # module calls per forward
    plain_call, probed_call = _per_call_cost(25)
    extra = (probed_call - plain_call) * calls
    print(f"resnet50_like, batch {args.batch}, CPU fp32 forward, {args.reps} interleaved reps")
    print(f"threads: {torch.get_num_threads()}, torch {torch.__version__}; CPU time per forward")
    for name, values in times.items():
        median = statistics.median(values)
        spread = ", ".join(f"{v * 1000:.0f}" for v in values)
        print(
            f"{name:<11} median {median * 1000:8.1f} ms   ratio {median / base:5.3f}x   [{spread}]"
        )
    print(
        f"per module call (2000 tiny Identity calls): plain {plain_call * 1e6:.2f} us, "
        f"detect_bypass {probed_call * 1e6:.2f} us; {calls} module calls per forward "
        f"-> +{extra * 1000:.2f} ms = {1 + extra / base:.4f}x of the plain forward"
    )


if __name__ == "__main__":
    main()
