"""hookscope.compare on GPT-2 small (config only, no weights): time and recording size.

Target (issue #16): comparing two runs costs at most 3x the two plain forwards,
and a recording of GPT-2 small for 128 tokens stays within the byte budget.

Each repetition times, back to back and alternating which goes first, the two
plain forwards under no_grad and one ``hookscope.compare`` of the same pair;
the ratio of each repetition is reported with the median and the spread.
Pairs: ``fp32`` (the model against a fp32 copy of itself: the cheapest
forwards, so the hardest case for the ratio) and ``autocast`` (fp32 against
bf16 autocast; bf16 matmuls are slow on CPUs without bf16 units). Then one
``hookscope.record`` is written and its size compared with the budget.

    .venv/bin/python benchmarks/compare_gpt2.py [--reps 5] [--tokens 128] [--pair fp32]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch

import hookscope
from hookscope.compare.recording import DEFAULT_MAX_BYTES


def gpt2_small() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(use_cache=False)).eval()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mode", choices=("propagate", "isolate", "both"), default="both")
    parser.add_argument("--pair", choices=("fp32", "autocast"), default="fp32")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    model = gpt2_small()
    ids = torch.arange(args.tokens).unsqueeze(0)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)
    twin = copy.deepcopy(model)
    side_b: object = twin if args.pair == "fp32" else autocast
    context = nullcontext() if args.pair == "fp32" else autocast

    def plain() -> None:
        with torch.no_grad():
            model(ids)
            with context:
                twin(ids)

    modes = ("propagate", "isolate") if args.mode == "both" else (args.mode,)
    plain()  # warm-up
    for mode in modes:
        hookscope.compare(model, side_b, ids, mode=mode)  # warm-up
        ratios, plains, compares = [], [], []
        for rep in range(args.reps):
            run = lambda mode=mode: hookscope.compare(model, side_b, ids, mode=mode)  # noqa: E731
            if rep % 2:
                t_cmp, t_plain = timed(run), timed(plain)
            else:
                t_plain, t_cmp = timed(plain), timed(run)
            plains.append(t_plain)
            compares.append(t_cmp)
            ratios.append(t_cmp / t_plain)
        print(
            f"{args.pair} {mode:9s}: compare / two forwards = {statistics.median(ratios):.2f}x "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f}; two forwards "
            f"{statistics.median(plains):.2f} s, compare {statistics.median(compares):.2f} s; "
            f"{args.reps} reps) target <= 3x"
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpt2.safetensors"
        rec = hookscope.record(model, ids, path=path)
        size = path.stat().st_size
        print(
            f"recording: {len(rec.calls)} module calls, {rec.nbytes / 2**20:.1f} MiB of tensors, "
            f"file {size / 2**20:.1f} MiB, budget {DEFAULT_MAX_BYTES / 2**20:.0f} MiB "
            f"({size / DEFAULT_MAX_BYTES:.0%} of it)"
        )


if __name__ == "__main__":
    main()
