"""hookscope.summary vs torchinfo.summary: wall time and MAC agreement, same run.

Usage::

    .venv/bin/python benchmarks/summary_vs_torchinfo.py [--reps 5]

For each model: hookscope with its default (meta device), hookscope with a
real CPU forward, and torchinfo (real CPU forward). Repetitions are
interleaved and each time is the median; one warm-up call each comes first.
Reference MACs are torchvision's published figures (GFLOPS column, which
counts multiply-accumulates).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torchinfo
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fixtures.vision_models import swin_t, vit_b_16

import hookscope
from hookscope.zoo import resnet50_like

MODELS: list[tuple[str, Callable[[], nn.Module], float]] = [
    ("resnet50", resnet50_like, 4.09),
    ("vit_b_16", vit_b_16, 17.56),
    ("swin_t", swin_t, 4.49),
]
SIZE = (1, 3, 224, 224)


def _time(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    torch.set_grad_enabled(True)
    runners: dict[str, Callable[[nn.Module], Any]] = {
        "hookscope": lambda m: hookscope.summary(m, input_size=SIZE).macs,
        "hookscope_cpu": lambda m: hookscope.summary(m, input_size=SIZE, device="cpu").macs,
        "torchinfo": lambda m: (
            torchinfo.summary(m, input_size=SIZE, device="cpu", verbose=0).total_mult_adds
        ),
    }
    models = {name: factory() for name, factory, _ in MODELS}
    times: dict[tuple[str, str], list[float]] = {}
    macs: dict[tuple[str, str], int] = {}
    for name, model in models.items():
        for tool, run in runners.items():
            macs[name, tool] = run(model)  # warm-up
    for _ in range(reps):
        for name, model in models.items():
            for tool, run in runners.items():
                elapsed, _ = _time(lambda run=run, model=model: run(model))
                times.setdefault((name, tool), []).append(elapsed)
    print(f"torch {torch.__version__}, torchinfo {torchinfo.__version__}, {reps} reps, medians")
    header = f"{'model':<9} {'ref GMACs':>9} {'hookscope':>9} {'torchinfo':>9}"
    header += f" {'hs meta s':>9} {'hs cpu s':>9} {'ti s':>7} {'meta/ti':>7} {'cpu/ti':>7}"
    print(header)
    total = {tool: 0.0 for tool in runners}
    for name, _factory, reference in MODELS:
        med = {tool: statistics.median(times[name, tool]) for tool in runners}
        for tool in runners:
            total[tool] += med[tool]
        print(
            f"{name:<9} {reference:>9.2f} {macs[name, 'hookscope'] / 1e9:>9.2f}"
            f" {macs[name, 'torchinfo'] / 1e9:>9.2f} {med['hookscope']:>9.3f}"
            f" {med['hookscope_cpu']:>9.3f} {med['torchinfo']:>7.3f}"
            f" {med['hookscope'] / med['torchinfo']:>7.2f}"
            f" {med['hookscope_cpu'] / med['torchinfo']:>7.2f}"
        )
    print(
        f"total time ratio hookscope(meta)/torchinfo: {total['hookscope'] / total['torchinfo']:.2f}; "
        f"hookscope(cpu)/torchinfo: {total['hookscope_cpu'] / total['torchinfo']:.2f}"
    )


if __name__ == "__main__":
    main()
