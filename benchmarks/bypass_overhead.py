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
    print(f"resnet50_like, batch {args.batch}, CPU fp32 forward, {args.reps} interleaved reps")
    print(f"threads: {torch.get_num_threads()}, torch {torch.__version__}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<11} median {median * 1000:8.1f} ms   ratio {median / base:5.3f}x")


if __name__ == "__main__":
    main()
