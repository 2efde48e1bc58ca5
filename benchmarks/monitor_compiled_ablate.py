"""Where compiled + Monitor time goes: formulations of the forward statistics, same run.

Copies of ``hookscope.zoo.SmallCNN`` (batch 32), each compiled, each with its
own ``forward`` code object so that dynamo keeps one cache entry per copy.
Variants (a Monitor opened before the first compiled call; where a variant
writes its rows as tensor ops that inductor fuses, ``TracedCollector.extern``
is set to False and the row function swapped through
``TracedCollector.reduce`` before that call):

* ``compiled``: no Monitor;
* ``outputs=False``: no forward statistics (gradient probes and parameter
  gradients kept);
* ``const rows``: rows written into the step buffer without reading the
  output (constants);
* ``sum only``: one reduction per output (its sum);
* ``float32``: all statistics accumulated in float32;
* ``per channel``: 4-D outputs reduced per channel first, then summed;
* ``tensor ops``: every row (forward and gradient) as tensor ops, the
  formulation other devices use;
* ``norm outputs``: the defaults but BatchNorm and ReLU rows read from
  their outputs (``TracedCollector.norm_from_input`` off);
* ``affine scratch``: the defaults but a BatchNorm's row made from
  its output rebuilt in a scratch tensor by three torch ops,
  then reduced (``native.moments_affine`` swapped out during its steps);
* ``python rows``: the defaults but each extern op's row handed back to
  Python and merged there (``rowop.KERNEL_ROWS`` off during its steps);
* ``python kernels``: the defaults but the extern ops' CPU kernels in Python
  (``cpuops.set_enabled(False)`` during its steps),
  each calling the C kernel through ctypes;
* ``sink rows``: the defaults but each gradient row handed back as a fresh
  ``(rows, 4)`` tensor, the gradient of a leaf that autograd sums
  (``TracedCollector.grad_into`` off);
* ``grad ops``: the defaults but gradient rows as tensor ops that inductor
  fuses into the backward's kernels (``TracedCollector.grad_extern`` off);
* ``grads=False``, ``params=False``: the defaults without gradient rows, or
  without parameter gradients (what each costs);
* ``keep=False``: the defaults without the retained results (what keeping them costs,
  mostly in garbage collection);
* ``defaults``: the Monitor as shipped (on the CPU one extern op per row,
  `hookscope.stats.rowop`; a BatchNorm's row and the next ReLU's from the
  BatchNorm's input).

A training step is forward + loss, backward, SGD step, ``mon.step()``; each
is timed separately. Steps alternate between variants (order reversed every
other round); medians over ``--steps`` rounds are printed with the ratio of
the whole step to ``compiled``, and the median of the per-round ratios to
``compiled`` (paired: each with the ``compiled`` step of its own round)
with its 95% confidence interval.

    .venv/bin/python benchmarks/monitor_compiled_ablate.py [--steps 30] [--only a,b]
        [--threads N] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch

sys.path.insert(0, str(Path(__file__).parent))
from monitor_compiled import median_ci_text

import hookscope
from hookscope.stats import Plan, cpuops, native, rowop
from hookscope.stats.traced import reduce_row
from hookscope.zoo import SmallCNN

Row = Callable[[torch.Tensor, Plan, torch.dtype], torch.Tensor]
PHASES = ("forward", "backward", "optimizer", "mon.step")


def _row(dtype: torch.dtype, **values: torch.Tensor) -> torch.Tensor:
    """A forward row (calls, numel, sum, sumsq, min, max, nonzero, nan, inf) from some values."""
    zero = torch.zeros((), dtype=dtype)
    fields = {"sumsq": zero, "min": zero + torch.inf, "max": zero - torch.inf, "nonzero": zero}
    fields |= {"nan": zero, "inf": zero, **values}
    order = ("sum", "sumsq", "min", "max", "nonzero", "nan", "inf")
    return torch.stack([zero + 1, zero + values["numel"], *(fields[k] for k in order)])


def const_rows(t: torch.Tensor, plan: Plan, dtype: torch.dtype) -> torch.Tensor:
    zero = torch.zeros((), dtype=dtype)
    return _row(dtype, numel=zero + t.numel(), sum=zero)


def sum_only(t: torch.Tensor, plan: Plan, dtype: torch.dtype) -> torch.Tensor:
    zero = torch.zeros((), dtype=dtype)
    return _row(dtype, numel=zero + t.numel(), sum=t.detach().sum().to(dtype))


def float32(t: torch.Tensor, plan: Plan, dtype: torch.dtype) -> torch.Tensor:
    return reduce_row(t, plan, torch.float32).to(dtype)


def per_channel(t: torch.Tensor, plan: Plan, dtype: torch.dtype) -> torch.Tensor:
    x = t.detach()
    if x.dim() != 4 or not x.is_floating_point():
        return reduce_row(t, plan, dtype)
    dims = (0, 2, 3)
    wide = x.to(dtype)

    def count(mask: torch.Tensor) -> torch.Tensor:
        return mask.sum(dim=dims, dtype=torch.int32).sum().to(dtype)

    return _row(
        dtype,
        numel=torch.zeros((), dtype=dtype) + x.numel(),
        sum=wide.sum(dim=dims).sum(),
        sumsq=(wide * wide).sum(dim=dims).sum(),
        min=x.amin(dim=dims).min().to(dtype),
        max=x.amax(dim=dims).max().to(dtype),
        nonzero=count(x != 0),
        nan=count(x != x),
        inf=count(x.abs() == torch.inf),
    )


#: name -> (Monitor options or None for no Monitor, row function or None for the default)
VARIANTS: dict[str, tuple[dict[str, bool] | None, Row | None]] = {
    "compiled": (None, None),
    "outputs=False": ({"outputs": False}, None),
    "const rows": ({}, const_rows),
    "sum only": ({}, sum_only),
    "float32": ({}, float32),
    "per channel": ({}, per_channel),
    "tensor ops": ({}, reduce_row),
    "norm outputs": ({}, None),
    "affine scratch": ({}, None),
    "python rows": ({}, None),
    "python kernels": ({}, None),
    "sink rows": ({}, None),
    "grad ops": ({}, None),
    "grads=False": ({"grads": False}, None),
    "params=False": ({"params": False}, None),
    "keep=False": ({"keep": False}, None),
    "defaults": ({}, None),
}


@contextlib.contextmanager
def python_rows(on: bool) -> Iterator[None]:
    """With ``on``, the extern ops merge rows in Python (`hookscope.stats.rowop.KERNEL_ROWS` off)."""
    real = rowop.KERNEL_ROWS
    if on:
        rowop.set_kernel_rows(False)
    try:
        yield
    finally:
        if on:
            rowop.set_kernel_rows(real)


@contextlib.contextmanager
def python_kernels(on: bool) -> Iterator[None]:
    """With ``on``, the extern ops' CPU kernels are the Python ones (`hookscope.stats.cpuops` off)."""
    if on:
        cpuops.set_enabled(False)
    try:
        yield
    finally:
        if on:
            cpuops.set_enabled(True)


@contextlib.contextmanager
def affine_scratch(on: bool) -> Iterator[None]:
    """With ``on``, BatchNorm rows take `hookscope.stats.rowop`'s scratch-tensor path."""
    real = native.moments_affine
    if on:
        native.moments_affine = lambda *args, **kwargs: None  # "the kernel does not take it"
    try:
        yield
    finally:
        native.moments_affine = real


def own_forward(model: SmallCNN, i: int) -> None:
    """Give ``model`` a ``forward`` with a code object of its own (its own dynamo cache)."""
    scope: dict[str, object] = {"SmallCNN": SmallCNN}
    src = "def forward(self, x):\n    return SmallCNN.forward(self, x)\n"
    exec(compile(src, f"<variant {i}>", "exec"), scope)  # fixed source, no input
    model.__class__ = type(f"SmallCNN{i}", (SmallCNN,), {"forward": scope["forward"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--only", help="comma-separated variant names (compiled is always run)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time, or the process's CPU time (all threads; with --threads 1 a busy "
        "machine inflates it less than wall time)",
    )
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    names = list(VARIANTS)
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - set(names)
        if unknown:
            parser.error(f"unknown variant(s) {sorted(unknown)}; choose from {names}")
        names = [n for n in names if n == "compiled" or n in wanted]
    torch.manual_seed(0)
    base, x = SmallCNN(), torch.randn(32, 3, 32, 32)
    runs, opts, mons = {}, {}, {}
    for i, name in enumerate(names):
        model = copy.deepcopy(base)
        own_forward(model, i)
        options, row = VARIANTS[name]
        if options is not None:
            mons[name] = hookscope.Monitor(model, **options).open()
            traced = mons[name]._compiled.traced
            if row is not None:
                traced.extern, traced.reduce = False, row
            traced.norm_from_input = name != "norm outputs"
            if name == "grad ops":
                traced.grad_extern = False
            traced.grad_into = name != "sink rows"
        runs[name] = torch.compile(model)
        opts[name] = torch.optim.SGD(model.parameters(), lr=1e-3)
    times: dict[str, dict[str, list[float]]] = {n: {p: [] for p in PHASES} for n in names}

    def step(name: str) -> None:
        t0 = clock()
        with (
            affine_scratch(name == "affine scratch"),
            python_rows(name == "python rows"),
            python_kernels(name == "python kernels"),
        ):
            loss = runs[name](x).square().mean()
            t1 = clock()
            loss.backward()
            t2 = clock()
        opts[name].step()
        opts[name].zero_grad()
        t3 = clock()
        if name in mons:
            mons[name].step()
        t4 = clock()
        for phase, took in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            times[name][phase].append(took)

    for name in names:  # compile, then one more call each (dynamo may specialise once more)
        step(name)
        step(name)
    for name in names:
        for phase in PHASES:
            times[name][phase].clear()
    for i in range(args.steps):
        for name in names if i % 2 == 0 else names[::-1]:
            step(name)
    for mon in mons.values():
        mon.close()
    totals = {n: [sum(v) for v in zip(*times[n].values(), strict=True)] for n in names}
    base_step = statistics.median(totals["compiled"])
    print(
        f"SmallCNN b32, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{args.clock} clock, ms:"
    )
    print(
        f"  {'variant':14s} " + " ".join(f"{p:>9s}" for p in PHASES) + "      step  ratio  paired"
    )
    for name in names:
        phases = " ".join(f"{statistics.median(times[name][p]) * 1e3:9.2f}" for p in PHASES)
        total = statistics.median(totals[name])
        paired = [t / c for t, c in zip(totals[name], totals["compiled"], strict=True)]
        print(
            f"  {name:14s} {phases} {total * 1e3:9.2f} {total / base_step:6.2f}x"
            f" {statistics.median(paired):6.3f}x ({median_ci_text(paired)})"
        )


if __name__ == "__main__":
    main()
