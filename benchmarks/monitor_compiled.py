"""Compiled training step vs the same step with ``hookscope.Monitor`` (defaults), same run.

Two identical copies of a model (``hookscope.zoo.SmallCNN`` at batch 32, or
a 2-layer GPT-2 from a ``transformers`` config with ``--model gpt2``), each
wrapped in ``torch.compile``; the Monitor is opened on copy B before its
first compiled call. A training step is forward, loss, backward, SGD step
(and ``mon.step()`` for B). Steps alternate A B B A; each repetition sums
``--steps`` steps of each and gives one ratio; the median and spread of the
ratios over ``--reps`` repetitions are printed.

Warm-up: the first step of each copy (dynamo + inductor compile), after a
throwaway compile that pays the process's one-time start-up, with the
inductor caches off (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``).

Dynamo does not guard on module hooks by default, so the second copy would
reuse the first copy's graph; the benchmark turns
``torch._dynamo.config.skip_nnmodule_hook_guards`` off so each copy gets
its own graph.

    .venv/bin/python benchmarks/monitor_compiled.py [--model cnn|gpt2] [--reps 7] [--steps 10]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from torch import nn

import hookscope
from hookscope.zoo import SmallCNN


def build(name: str) -> tuple[nn.Module, Callable[[Any], torch.Tensor]]:
    """The model and a loss function of (compiled) model -> scalar."""
    if name == "cnn":
        x = torch.randn(32, 3, 32, 32)
        return SmallCNN(), lambda m: m(x).square().mean()
    import transformers

    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    ids = torch.randint(0, 512, (8, 64))
    return transformers.GPT2LMHeadModel(config), lambda m: m(input_ids=ids).logits.square().mean()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("cnn", "gpt2"), default="cnn")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch._dynamo.config.skip_nnmodule_hook_guards = False
    torch.compile(lambda t: (t * 2).sum())(torch.randn(8))  # one-time start-up

    base, loss = build(args.model)
    plain = copy.deepcopy(base)
    watched = copy.deepcopy(base)
    mon = hookscope.Monitor(watched).open()
    runs = {"compiled": torch.compile(plain), "compiled + Monitor": torch.compile(watched)}
    opts = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, m in runs.items()}

    def step(key: str) -> float:
        start = time.perf_counter()
        loss(runs[key]).backward()
        opts[key].step()
        opts[key].zero_grad()
        if key != "compiled":
            mon.step()
        return time.perf_counter() - start

    warm = {key: step(key) for key in runs}
    for key in runs:  # a second call: dynamo may specialise once more
        step(key)
    ratios, times = [], {key: [] for key in runs}
    keys = list(runs)
    for _ in range(args.reps):
        total = dict.fromkeys(keys, 0.0)
        for i in range(args.steps):
            for key in keys if i % 2 == 0 else keys[::-1]:
                total[key] += step(key)
        ratios.append(total[keys[1]] / total[keys[0]])
        for key in keys:
            times[key].append(total[key] / args.steps)
    mon.close()
    print(f"model {args.model}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    for key in keys:
        print(
            f"  {key:20s} warm-up {warm[key]:6.2f} s   step {statistics.median(times[key]) * 1e3:7.2f} ms"
        )
    print(f"warm-up ratio {warm[keys[1]] / warm[keys[0]]:.2f}x")
    print(
        f"step ratio median {statistics.median(ratios):.3f}x "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}, {args.reps} reps x {args.steps} steps)"
    )


if __name__ == "__main__":
    main()
