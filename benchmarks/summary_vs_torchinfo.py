"""hookscope.summary vs torchinfo.summary and FlopCounterMode: wall time and counts, same run.

Usage::

    .venv/bin/python benchmarks/summary_vs_torchinfo.py [--set small|vision] [--reps 5] [--verbose]

``--set small`` (default): the 51 small models of ``benchmarks/small_models.py``
(torchvision-style CNNs and transformer blocks built locally, batch 1).
``--set vision``: ResNet-50, ViT-B/16 and Swin-T at 1x3x224x224, with
torchvision's published GMACs as the reference.

For each model and repetition the tools run interleaved: hookscope with its
default (meta device), hookscope again with its meta-op cache emptied first
(``hs_cold``: what a model whose ops no earlier summary in the process ran
costs), torchinfo (real CPU forward) and
``torch.utils.flop_counter.FlopCounterMode`` around a real CPU forward under
``no_grad`` (MACs = FLOPs / 2); each time is the median over repetitions after
one warm-up call each. Counts: hookscope's MACs against FlopCounterMode's and
hookscope's parameter total against torchinfo's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torchinfo
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from small_models import MODELS as SMALL

import hookscope
from hookscope.summary import opcache

Entry = tuple[str, Callable[[], nn.Module], tuple[int, ...], torch.dtype]


def vision_models() -> tuple[list[Entry], dict[str, float]]:
    from tests.fixtures.vision_models import swin_t, vit_b_16

    from hookscope.zoo import resnet50_like

    size = (1, 3, 224, 224)
    entries: list[Entry] = [
        ("resnet50", resnet50_like, size, torch.float32),
        ("vit_b_16", vit_b_16, size, torch.float32),
        ("swin_t", swin_t, size, torch.float32),
    ]
    return entries, {"resnet50": 4.09, "vit_b_16": 17.56, "swin_t": 4.49}


def real_input(size: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    return torch.ones(size, dtype=dtype) if dtype == torch.long else torch.randn(size)


def run_hookscope(model: nn.Module, size: tuple[int, ...], dtype: torch.dtype) -> tuple[int, int]:
    s = hookscope.summary(model, input_size=size, dtypes=dtype)
    return s.macs, s.total_params


def run_torchinfo(model: nn.Module, size: tuple[int, ...], dtype: torch.dtype) -> tuple[int, int]:
    s = torchinfo.summary(model, input_size=size, dtypes=[dtype], device="cpu", verbose=0)
    return s.total_mult_adds, s.total_params


def run_flopcounter(model: nn.Module, size: tuple[int, ...], dtype: torch.dtype) -> tuple[int, int]:
    x = real_input(size, dtype)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(x)
    return counter.get_total_flops() // 2, 0


def run_hookscope_cold(
    model: nn.Module, size: tuple[int, ...], dtype: torch.dtype
) -> tuple[int, int]:
    warm, opcache._SHARED = opcache._SHARED, opcache.OpCache()  # no op known from before
    try:
        return run_hookscope(model, size, dtype)
    finally:
        opcache._SHARED = warm


TOOLS = {
    "hookscope": run_hookscope,
    "hs_cold": run_hookscope_cold,
    "torchinfo": run_torchinfo,
    "flopcounter": run_flopcounter,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["small", "vision"], default="small")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--verbose", action="store_true", help="one line per model")
    args = parser.parse_args()
    entries, published = (SMALL, {}) if args.set == "small" else vision_models()
    models = {name: factory().eval() for name, factory, _, _ in entries}
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    times: dict[tuple[str, str], list[float]] = {}
    print(f"load average before: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    for name, _, size, dtype in entries:
        for tool, run in TOOLS.items():
            counts[name, tool] = run(models[name], size, dtype)  # warm-up
    for _ in range(args.reps):
        for name, _, size, dtype in entries:
            for tool, run in TOOLS.items():
                start = time.perf_counter()
                run(models[name], size, dtype)
                times.setdefault((name, tool), []).append(time.perf_counter() - start)
    print(f"load average after: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    med = {key: statistics.median(values) for key, values in times.items()}
    total = {tool: sum(med[name, tool] for name in models) for tool in TOOLS}
    if args.verbose or published:
        print(
            f"{'model':<28}{'MACs hs':>14}{'MACs fcm':>14}{'MACs ti':>14}"
            + "".join(f"{t + ' ms':>15}" for t in TOOLS)
        )
        for name in models:
            macs = [counts[name, tool][0] for tool in ("hookscope", "flopcounter", "torchinfo")]
            ref = f" (published {published[name]:.2f} G)" if name in published else ""
            cells = "".join(f"{m:>14,}" for m in macs)
            print(
                f"{name:<28}{cells}" + "".join(f"{med[name, t] * 1e3:>15.1f}" for t in TOOLS) + ref
            )
    same_macs = [n for n in models if counts[n, "hookscope"][0] == counts[n, "flopcounter"][0]]
    same_params = [n for n in models if counts[n, "hookscope"][1] == counts[n, "torchinfo"][1]]
    cold_same = [n for n in models if counts[n, "hs_cold"] == counts[n, "hookscope"]]
    print(f"hs_cold counts equal to hookscope's: {len(cold_same)}/{len(models)}")
    print(
        f"torch {torch.__version__}, torchinfo {torchinfo.__version__}; {len(models)} models"
        f" ({args.set}), batch 1, {args.reps} reps, medians, {torch.get_num_threads()} threads"
    )
    print(
        f"MACs equal to FlopCounterMode's: {len(same_macs)}/{len(models)}; params equal to torchinfo's: {len(same_params)}/{len(models)}"
    )
    for name in sorted(set(models) - set(same_macs)):
        print(
            f"  MACs differ on {name}: hookscope {counts[name, 'hookscope'][0]:,}, FlopCounterMode {counts[name, 'flopcounter'][0]:,}"
        )
    for tool in TOOLS:
        print(f"total {tool:<12} {total[tool]:8.3f} s")
    faster = min(total["torchinfo"], total["flopcounter"])
    print(
        f"hookscope / torchinfo {total['hookscope'] / total['torchinfo']:.2f}; "
        f"hookscope / FlopCounterMode {total['hookscope'] / total['flopcounter']:.2f}; "
        f"hookscope / faster anchor {total['hookscope'] / faster:.2f}; "
        f"with an empty op cache each time (hs_cold) {total['hs_cold'] / faster:.2f}"
    )


if __name__ == "__main__":
    main()
