"""Monitor under DDP: what a training step costs plain, with ``Monitor(ranks="local")`` and ``"reduce"``.

Two processes (gloo on CPU, one thread each, by default) train a small
transformer language model (2 encoder layers, d_model 128, batch 8 x 64
tokens). Each rank holds seven copies of the same model:

* ``ddp``: DistributedDataParallel, no hooks;
* ``ddp+local``: DDP under ``Monitor(ranks="local")`` (defaults otherwise);
* ``ddp+reduce``: DDP under ``Monitor(ranks="reduce", grads="reduced")``;
* ``ddp+reduce/lg``: DDP under ``Monitor(ranks="reduce")`` (local gradients:
  the collectives' cost without the second read of the reduced gradients);
* ``ddp+reduce/read``: as ``ddp+reduce``, but each step's records are read
  right after ``step()``, which then waits for its all-reduces (what every
  step cost before they were left running);
* ``single`` and ``single+monitor``: the model without DDP, plain and under a
  default Monitor: the Monitor's cost where no torch.distributed is involved.

The time spent inside ``mon.step()`` is printed per variant: one transfer;
for ``reduce`` also starting its two all-reduces (a SUM and a MAX) and
completing the previous step's, which ran during this step's forward and
backward (``step()`` does not wait for its own; the results are read after
the timed repetitions).

A step is ``zero_grad, forward, backward, optimizer step, mon.step()``. Each
repetition runs every variant's steps interleaved (ABBA order over the
variants), so all see the same machine; each repetition gives each variant's
median step time (one step stalled by another process moves nothing), and
rank 0 prints the median over repetitions of each paired ratio (with min-max).

Figures: ``local overhead (DDP)`` = ddp+local / ddp - 1 and ``local overhead
(no DDP)`` = single+monitor / single - 1 (target: the first at most 5 points
above the second); ``reduce extra`` = (ddp+reduce - ddp+local) / ddp (target
at most 2 %), and the same for ddp+reduce/lg.

    .venv/bin/python benchmarks/monitor_distributed.py [--reps 7] [--steps 4] [--nproc 2]
    .venv/bin/python benchmarks/monitor_distributed.py --backend nccl --nproc 1  # on a GPU
"""

from __future__ import annotations

import argparse
import copy
import os
import socket
import statistics
import time
from typing import Any

import torch
import torch.distributed as tdist
import torch.multiprocessing as mp
from torch import nn

import hookscope


class LM(nn.Module):
    """Embedding, 2 transformer encoder layers, a vocabulary head."""

    def __init__(self, vocab: int = 1000, width: int = 128) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(self.layers(self.embed(ids)))
        return out


class Variant:
    """One model copy, its optimizer and (maybe) its monitor."""

    def __init__(
        self, name: str, model: nn.Module, monitor: dict[str, Any] | None, read: bool = False
    ) -> None:
        self.name = name
        self.read = read  # read the step's records at once: wait for its all-reduces
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        self.mon = None if monitor is None else hookscope.Monitor(model, **monitor).open()
        self.step_time = 0.0  # inside mon.step(): the transfer, and the collectives of "reduce"

    def step(self, ids: torch.Tensor, targets: torch.Tensor) -> float:
        start = time.perf_counter()
        self.opt.zero_grad()
        logits = self.model(ids)
        nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
        self.opt.step()
        if self.mon is not None:
            before = time.perf_counter()
            result = self.mon.step()
            if self.read and result is not None:
                assert result.records
            self.step_time += time.perf_counter() - before
        return time.perf_counter() - start


def _variants(device: torch.device) -> list[Variant]:
    torch.manual_seed(0)
    base = LM().to(device)
    ids = [device.index] if device.type == "cuda" else None

    def ddp() -> nn.Module:
        return nn.parallel.DistributedDataParallel(copy.deepcopy(base), device_ids=ids)

    return [
        Variant("ddp", ddp(), None),
        Variant("ddp+local", ddp(), {"ranks": "local", "keep": True}),
        Variant("ddp+reduce", ddp(), {"ranks": "reduce", "grads": "reduced", "keep": True}),
        Variant("ddp+reduce/lg", ddp(), {"ranks": "reduce", "keep": True}),
        Variant("ddp+reduce/read", ddp(), {"ranks": "reduce", "grads": "reduced"}, read=True),
        Variant("single", copy.deepcopy(base), None),
        Variant("single+monitor", copy.deepcopy(base), {"keep": True}),
    ]


def worker(rank: int, world: int, port: int, args: argparse.Namespace) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    tdist.init_process_group(args.backend, rank=rank, world_size=world)
    torch.set_num_threads(args.threads)
    device = torch.device("cuda", rank) if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    variants = _variants(device)
    generator = torch.Generator().manual_seed(rank)
    ids = torch.randint(0, 1000, (args.batch, 64), generator=generator).to(device)
    targets = torch.randint(0, 1000, (args.batch, 64), generator=generator).to(device)
    for variant in variants:  # warm-up: kernel build, DDP buckets, allocator
        for _ in range(2):
            variant.step(ids, targets)
    per_rep: dict[str, list[float]] = {v.name: [] for v in variants}
    for rep in range(args.reps):
        order = variants if rep % 2 == 0 else variants[::-1]
        times: dict[str, list[float]] = {name: [] for name in per_rep}
        for _ in range(args.steps):
            for variant in [*order, *order[::-1]]:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                times[variant.name].append(variant.step(ids, targets))
        for name, steps in times.items():  # the median step: one stalled step moves nothing
            per_rep[name].append(statistics.median(steps))
    for variant in variants:
        if variant.mon is not None:
            variant.mon.close()
    reduce = variants[2].mon
    keys = len(reduce.results[-1].tensors) if reduce is not None and reduce.results else 0
    start, trip = _collectives_alone(max(keys, 100))
    if rank == 0:
        print(
            f"  reduce's all-reduces alone, after a barrier ({max(keys, 100)} tensors): "
            f"starting them {1000 * start:.2f} ms, round trip {1000 * trip:.2f} ms"
        )
        _report(per_rep, world, args)
        total = args.reps * 2 * args.steps
        for variant in variants:
            if variant.mon is not None:
                print(
                    f"  {variant.name:15s} mon.step() {1000 * variant.step_time / total:6.2f} ms/step"
                )
    tdist.destroy_process_group()


def _collectives_alone(keys: int, rounds: int = 20) -> tuple[float, float]:
    """Median times to start a ``ranks="reduce"`` step's all-reduces, and to complete them.

    What `hookscope.monitor.ranks.RankCombiner` does at each step once the
    ranks agree on the tensors: one SUM all-reduce of 6 numbers per tensor and
    one MAX of 2 per tensor plus a header, started in ``step()``; the wait is
    timed here right after a barrier (all ranks there), the full round trip
    that ``step()`` no longer waits for.
    """
    from hookscope import dist

    starts, trips = [], []
    for _ in range(rounds):
        tdist.barrier()
        begin = time.perf_counter()
        running = dist.start_reduce(
            torch.zeros(6 * keys, dtype=torch.float64),
            torch.zeros(3 + 2 * keys, dtype=torch.float64),
            "benchmark",
        )
        started = time.perf_counter()
        running.wait()
        starts.append(started - begin)
        trips.append(time.perf_counter() - begin)
    return statistics.median(starts), statistics.median(trips)


def _ratio(per_rep: dict[str, list[float]], a: str, b: str) -> list[float]:
    return [x / y for x, y in zip(per_rep[a], per_rep[b], strict=True)]


def _fmt(values: list[float]) -> str:
    pct = [100 * v for v in values]
    return f"{statistics.median(pct):+6.1f} %  (min {min(pct):+.1f}, max {max(pct):+.1f})"


def _report(per_rep: dict[str, list[float]], world: int, args: argparse.Namespace) -> None:
    steps = 2 * args.steps
    print(f"{world} process(es), backend {args.backend}, {args.reps} reps x {steps} steps each")
    for name, times in per_rep.items():
        print(f"  {name:15s} {1000 * statistics.median(times):8.1f} ms/step (median)")
    ddp_local = [r - 1 for r in _ratio(per_rep, "ddp+local", "ddp")]
    single = [r - 1 for r in _ratio(per_rep, "single+monitor", "single")]
    print(f"local overhead (DDP)     {_fmt(ddp_local)}")
    print(f"local overhead (no DDP)  {_fmt(single)}")
    print(
        f"DDP minus no-DDP         {_fmt([a - b for a, b in zip(ddp_local, single, strict=True)])}"
    )
    print(f"reduce extra (vs ddp)    {_fmt(_extra(per_rep, 'ddp+reduce'))}")
    print(f"  same, local grads      {_fmt(_extra(per_rep, 'ddp+reduce/lg'))}")
    print(f"  same, read at once     {_fmt(_extra(per_rep, 'ddp+reduce/read'))}")


def _extra(per_rep: dict[str, list[float]], name: str) -> list[float]:
    """(variant - ddp+local) / ddp per repetition: what a ``reduce`` variant adds to ``local``."""
    local, plain = per_rep["ddp+local"], per_rep["ddp"]
    return [(r - lo) / d for r, lo, d in zip(per_rep[name], local, plain, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=4, help="ABBA rounds per repetition")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(worker, args=(args.nproc, port, args), nprocs=args.nproc, join=True)


if __name__ == "__main__":
    main()
