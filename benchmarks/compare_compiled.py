"""Comparing against a compiled model, against one whole-model compile.

`hookscope.compare(model, lambda m: torch.compile(m), x)` on a 2-layer GPT-2
(from a config) is timed against ``torch.compile(model)(x)`` — the compile and
first forward a user pays anyway. Each measurement runs in its own process
with an empty inductor cache (inductor's imports are done before the timer),
the two alternating::

    HF_HUB_OFFLINE=1 python benchmarks/compare_compiled.py --pairs 3

prints each pair's times and ratio, then the median ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

WHAT = ("compare", "whole")


def measure(what: str) -> float:
    """One timing in this process: ``compare`` or ``whole``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    import hookscope

    with torch.no_grad():  # inductor's imports, outside the timer
        torch.compile(torch.nn.Linear(2, 2))(torch.randn(1, 2))
    torch._dynamo.reset()
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=128, n_positions=64, n_embd=64, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.arange(32).unsqueeze(0)
    start = time.perf_counter()
    if what == "compare":
        hookscope.compare(model, lambda m: torch.compile(m), ids)
    else:
        with torch.no_grad():
            torch.compile(model)(ids)
    return time.perf_counter() - start


def run(what: str) -> float:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="inductor-")}
    done = subprocess.run(
        [sys.executable, __file__, "--one", what],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--one", choices=WHAT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(measure(args.one))
        return
    ratios = []
    for pair in range(args.pairs):
        order = WHAT if pair % 2 == 0 else WHAT[::-1]
        times = {what: run(what) for what in order}
        ratios.append(times["compare"] / times["whole"])
        print(
            f"pair {pair}: compare {times['compare']:.1f} s, "
            f"whole-model compile {times['whole']:.1f} s, ratio {ratios[-1]:.2f}x"
        )
    print(f"median ratio {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
