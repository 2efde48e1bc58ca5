"""Compiled training step vs the same step with ``hookscope.Monitor`` (defaults), same run.

Two identical copies of a model (``hookscope.zoo.SmallCNN`` at batch 32, or
a 2-layer GPT-2 from a ``transformers`` config with ``--model gpt2``), each
wrapped in ``torch.compile``; the Monitor is opened on copy B before its
first compiled call. A training step is forward, loss, backward, SGD step
(and ``mon.step()`` for B).

Paired and alternating: steps run A B B A A B ..., each adjacent A and B
step form a pair and give one ratio (B's time / A's), so a slow moment on
the machine falls on both steps of a pair rather than on one copy. The run
is ``--reps`` blocks of ``--steps`` pairs. Printed: the median of all the
pair ratios with its 95% confidence interval (distribution-free, from the
order statistics), the quartiles, the median extra time of B over A in a
pair, the ratio of the total times (outliers count there), and the median
ratio of each block (drift over the run).

On a shared machine the ratio falls as the load rises: the compiled step's
kernels use every core and wait for one that is busy, while most of what
the Monitor adds runs on one thread, so its extra time moves less than the
compiled step. Compare ratios taken at similar loads, or the extra time.

Warm-up: the first step of each copy (dynamo + inductor compile), after a
throwaway compile that pays the process's one-time start-up, with the
inductor caches off (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``).

Dynamo does not guard on module hooks by default, so the second copy would
reuse the first copy's graph; the benchmark turns
``torch._dynamo.config.skip_nnmodule_hook_guards`` off so each copy gets
its own graph.

    .venv/bin/python benchmarks/monitor_compiled.py [--model cnn|gpt2] [--reps 10] [--steps 100]
"""

from __future__ import annotations

import argparse
import copy
import math
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


def median_ci_text(values: list[float]) -> str:
    """The 95% confidence interval of the median of ``values``, as text (order statistics).

    The ranks ``k`` and ``n - k + 1`` with ``k`` the largest count whose
    binomial(n, 1/2) lower tail stays under 2.5%; fewer than 6 values have none.
    """
    ordered = sorted(values)
    n = len(ordered)
    tail, k = 0.0, 0
    for i in range(n // 2):
        tail += math.comb(n, i) / 2**n
        if tail > 0.025:
            break
        k = i + 1
    if k == 0:
        return "no 95% CI: too few values"
    return f"95% CI {ordered[k - 1]:.3f}-{ordered[n - k]:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("cnn", "gpt2"), default="cnn")
    parser.add_argument("--reps", type=int, default=10, help="blocks of pairs")
    parser.add_argument("--steps", type=int, default=100, help="pairs (A and B steps) per block")
    args = parser.parse_args()
    if args.reps < 1 or args.steps < 1:
        parser.error(f"--reps and --steps must be >= 1, got {args.reps} and {args.steps}")
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
    keys = list(runs)
    times: dict[str, list[float]] = {key: [] for key in keys}
    blocks: list[list[float]] = []
    for _ in range(args.reps):
        block = []
        for i in range(args.steps):
            took = {key: step(key) for key in (keys if i % 2 == 0 else keys[::-1])}
            block.append(took[keys[1]] / took[keys[0]])
            for key in keys:
                times[key].append(took[key])
        blocks.append(block)
    mon.close()

    ratios = [r for block in blocks for r in block]
    extra = [(b - a) * 1e3 for a, b in zip(times[keys[0]], times[keys[1]], strict=True)]
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else (ratios[0],) * 3
    block_medians = [statistics.median(block) for block in blocks]
    print(f"model {args.model}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    for key in keys:
        print(
            f"  {key:20s} warm-up {warm[key]:6.2f} s   step {statistics.median(times[key]) * 1e3:7.2f} ms"
        )
    print(f"warm-up ratio {warm[keys[1]] / warm[keys[0]]:.2f}x")
    print(
        f"step ratio median {statistics.median(ratios):.3f}x "
        f"({median_ci_text(ratios)}; quartiles {q1:.3f}-{q3:.3f}; "
        f"{len(ratios)} pairs = {args.reps} reps x {args.steps} steps)"
    )
    print(f"step extra median {statistics.median(extra):.2f} ms ({median_ci_text(extra)})")
    print(f"total-time ratio {sum(times[keys[1]]) / sum(times[keys[0]]):.3f}x")
    print(
        f"block medians {min(block_medians):.3f}-{max(block_medians):.3f}: "
        + " ".join(f"{m:.3f}" for m in block_medians)
    )


if __name__ == "__main__":
    main()
