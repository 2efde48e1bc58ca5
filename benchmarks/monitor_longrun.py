"""Long runs: the Monitor's memory per step, and the cost of the NaN/Inf sentinel of ``every``.

``memory``: a model of 36 Linear -> GELU -> LayerNorm blocks (110 leaf
modules, ~2,000 statistics a step) trains ``--steps`` SGD steps on CPU under a
default ``hookscope.Monitor`` (``every=1``, ``history=200``); the process's
RSS is read at steps 100, half-way and the end. Printed: the growth over the
second half in MiB and in bytes per step, and the length of ``results``.
``--history none`` shows what an unbounded history costs.

``sentinel``: the GPT-2 6L CPU benchmark of ``monitor_overhead.py`` (6
layers, 768 wide, batch 4 x 128, from a ``transformers`` config; inference
forward by default, ``--train`` adds the backward) with a
``Monitor(every=10**9)``, so that every step after the first is an
unrecorded step on which the sentinel checks every monitored tensor for
NaN/Inf. Each monitored step alternates with a step of an identical
unhooked copy (A B, B A), a repetition sums ``--steps`` pairs of each, and
the median ratio over ``--reps`` repetitions is printed, of wall time and of
the process's CPU time (with one thread, what the step computed: less
disturbed than wall time when other processes share the cores), with the
load average before and after.

    .venv/bin/python benchmarks/monitor_longrun.py memory [--steps 5000] [--history 200|none]
    .venv/bin/python benchmarks/monitor_longrun.py sentinel [--reps 9] [--steps 1] [--train]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

import hookscope


def rss_mib() -> float:
    """Resident set size of this process, MiB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def blocks(count: int = 36, width: int = 64) -> nn.Sequential:
    """Linear(16, w), then ``count`` Linear -> GELU -> LayerNorm blocks, then Linear(w, 1)."""
    layers: list[nn.Module] = [nn.Linear(16, width)]
    for _ in range(count):
        layers += [nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width)]
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def memory(steps: int, history: int | None) -> None:
    torch.manual_seed(0)
    model = blocks()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 16), torch.randn(32, 1)
    marks = {100: 0.0, steps // 2: 0.0, steps: 0.0}
    start = time.perf_counter()
    with hookscope.Monitor(model, history=history) as mon:
        for step in range(1, steps + 1):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            mon.step()
            if step in marks:
                marks[step] = rss_mib()
        kept = len(mon.results)
    half, end = marks[steps // 2], marks[steps]
    leaves = sum(1 for m in model.modules() if next(m.children(), None) is None)
    print(f"memory: {leaves} leaf modules, {steps} steps, history={history}, "
          f"{time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("  RSS MiB at steps " + ", ".join(f"{s}: {v:.1f}" for s, v in marks.items()))
    growth = end - half
    per_step = growth * 2**20 / (steps - steps // 2)
    print(f"  growth over steps {steps // 2}-{steps}: {growth:+.1f} MiB ({per_step:+.0f} B/step); "
          f"len(results) = {kept}")  # fmt: skip


def gpt2(train: bool) -> tuple[nn.Module, torch.Tensor]:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)
    model = GPT2Model(config)
    model.train(train)
    return model, torch.randint(0, config.vocab_size, (4, 128))


def sentinel(reps: int, steps: int, train: bool) -> None:
    plain, ids = gpt2(train)
    hooked = copy.deepcopy(plain)

    def step_of(model: nn.Module) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            start, cpu = time.perf_counter(), time.process_time()
            if train:
                model.zero_grad(set_to_none=True)
                model(ids).last_hidden_state.square().mean().backward()
            else:
                with torch.no_grad():
                    model(ids)
            return time.perf_counter() - start, time.process_time() - cpu

        return run

    a, b = step_of(plain), step_of(hooked)
    load = os.getloadavg()[0]
    with hookscope.Monitor(hooked, every=10**9) as mon:
        b()
        mon.step()  # step 0 is recorded; every later step is checked only

        def checked() -> tuple[float, float]:
            took, cpu_took = b()
            start, cpu = time.perf_counter(), time.process_time()
            assert mon.step() is None
            return took + time.perf_counter() - start, cpu_took + time.process_time() - cpu

        a(), checked()  # warm-up
        ratios, cpu_ratios = [], []
        for _ in range(reps):
            plain_t = [0.0, 0.0]  # wall, CPU
            hooked_t = [0.0, 0.0]
            for i in range(2 * steps):
                order = (a, checked) if i % 2 == 0 else (checked, a)
                for fn in order:
                    wall, cpu = fn()
                    total = plain_t if fn is a else hooked_t
                    total[0] += wall
                    total[1] += cpu
            ratios.append(hooked_t[0] / plain_t[0])
            cpu_ratios.append(hooked_t[1] / plain_t[1])
    mode = "train (forward + backward)" if train else "inference forward"
    print(f"sentinel: GPT-2 6L 768, batch 4x128, CPU fp32, {mode}, {torch.get_num_threads()} "
          f"thread(s); load {load:.1f} -> {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"  plain step {plain_t[0] / (2 * steps) * 1e3:.0f} ms wall, "
          f"{plain_t[1] / (2 * steps) * 1e3:.0f} ms CPU")  # fmt: skip
    for name, values in (("wall", ratios), ("CPU", cpu_ratios)):
        shown = " ".join(f"{r:.3f}" for r in values)
        print(f"  checked step / plain step, {name} time: median "
              f"{statistics.median(values):.3f} (reps: {shown})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    mem = sub.add_parser("memory")
    mem.add_argument("--steps", type=int, default=5000)
    mem.add_argument("--history", default="200")
    sen = sub.add_parser("sentinel")
    sen.add_argument("--reps", type=int, default=9)
    sen.add_argument("--steps", type=int, default=1, help="A B + B A pairs per repetition")
    sen.add_argument("--train", action="store_true")
    args = parser.parse_args()
    if args.what == "memory":
        memory(args.steps, None if args.history == "none" else int(args.history))
    else:
        sentinel(args.reps, args.steps, args.train)


if __name__ == "__main__":
    main()
