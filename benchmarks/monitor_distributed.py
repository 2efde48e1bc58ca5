"""Monitor under DDP: what a training step costs plain, with ``Monitor(ranks="local")`` and ``"reduce"``.

Two processes (gloo on CPU, one thread each, by default) train a small
transformer language model (2 encoder layers, d_model 128, batch 8 x 64
tokens). Each rank holds copies of the same model:

* ``ddp``: DistributedDataParallel, no hooks;
* ``ddp+local``: DDP under ``Monitor(ranks="local")`` (defaults otherwise);
* ``ddp+reduce``: DDP under ``Monitor(ranks="reduce", grads="reduced")``;
* ``single`` and ``single+monitor``: the model without DDP, plain and under a
  default Monitor: the Monitor's cost where no torch.distributed is involved;
* with ``--extra``: ``ddp+reduce/lg`` (``ranks="reduce"`` with local
  gradients) and ``ddp+reduce/read`` (each step's records read right after
  ``step()``, which then waits for its all-reduces).

The variants take turns **one step each** (A B C D E, then B C D E A, ...:
the order rotates every round so no variant always follows the same one).
A step is ``zero_grad, forward, backward, optimizer step, mon.step()``.
After ``--warmup`` rounds, every round gives paired per-step ratios between
variants that ran a few milliseconds apart; rank 0 prints their median and
interquartile range (IQR) over the rounds. A stall of the machine moves one
round's ratio, not the median.

Figures, on wall-clock and on the CPU time of the process (all its threads;
waiting and preemption excluded): ``local overhead (DDP)`` = ddp+local / ddp
- 1 and ``local overhead (no DDP)`` = single+monitor / single - 1 (target:
the first at most 5 points above the second); ``reduce extra`` = (ddp+reduce
- ddp+local) / ddp (target at most 2 %).

The parts of the Monitor that differ between ``local`` and ``reduce`` are
also timed directly, inside every step: ``mon.step()`` (one transfer; for
``reduce`` also packing, starting its two all-reduces and completing the
previous step's, which ran during this step's forward and backward) and the
parameter gradients (``grads="local"``: the post-accumulate-grad hooks;
``"reduced"``: the read after the backward). Their paired difference over
the DDP step is ``reduce``'s extra measured without the step's own noise.

    .venv/bin/python benchmarks/monitor_distributed.py [--rounds 300] [--warmup 20] [--extra]
    .venv/bin/python benchmarks/monitor_distributed.py --backend nccl --nproc 1  # on a GPU
"""

from __future__ import annotations

import argparse
import copy
import os
import socket
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as tdist
import torch.multiprocessing as mp
from torch import nn

import hookscope
from hookscope.monitor.collector import Collector
from hookscope.monitor.ranks import GradReader


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


#: id(collector or gradient reader) -> its variant's per-step gradient time list.
_GRAD_TIME: dict[int, list[float]] = {}


def _timed(cls: Any, method: str) -> None:
    """Time ``cls.method`` per call into its owner's `_GRAD_TIME` list (patched once, by class)."""
    original: Callable[..., Any] = getattr(cls, method)

    def timed(self: Any, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, *args)
        finally:
            spent = _GRAD_TIME.get(id(self))
            if spent is not None:
                spent[-1] += time.perf_counter() - start

    setattr(cls, method, timed)


_timed(Collector, "on_param_grad")
_timed(GradReader, "_read_parts")


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
        self.times: list[float] = []  # whole steps, wall-clock
        self.cpu: list[float] = []  # whole steps, CPU time of the process (all its threads)
        self.step_time: list[float] = []  # inside mon.step()
        #: per step: the parameter-gradient hooks (grads="local") or the read after the
        #: backward (grads="reduced"), the one part of the hooks that differs between them
        self.grad_time = [0.0]
        if self.mon is not None:
            _GRAD_TIME[id(self.mon._collector)] = self.grad_time
            reader = self.mon._combiner.reader
            if reader is not None:
                _GRAD_TIME[id(reader)] = self.grad_time

    def step(self, ids: torch.Tensor, targets: torch.Tensor) -> None:
        self.grad_time.append(0.0)
        cpu = time.process_time()
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
            self.step_time.append(time.perf_counter() - before)
        self.times.append(time.perf_counter() - start)
        self.cpu.append(time.process_time() - cpu)


def _variants(device: torch.device, extra: bool) -> list[Variant]:
    torch.manual_seed(0)
    base = LM().to(device)
    ids = [device.index] if device.type == "cuda" else None

    def ddp() -> nn.Module:
        return nn.parallel.DistributedDataParallel(copy.deepcopy(base), device_ids=ids)

    reduce = {"ranks": "reduce", "grads": "reduced"}
    variants = [
        Variant("ddp", ddp(), None),
        Variant("ddp+local", ddp(), {"ranks": "local", "keep": False}),
        Variant("ddp+reduce", ddp(), {**reduce, "keep": False}),
        Variant("single", copy.deepcopy(base), None),
        Variant("single+monitor", copy.deepcopy(base), {"keep": False}),
    ]
    if extra:
        variants += [
            Variant("ddp+reduce/lg", ddp(), {"ranks": "reduce", "keep": False}),
            Variant("ddp+reduce/read", ddp(), {**reduce, "keep": False}, read=True),
        ]
    return variants


def worker(rank: int, world: int, port: int, args: argparse.Namespace) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    tdist.init_process_group(args.backend, rank=rank, world_size=world)
    torch.set_num_threads(args.threads)
    device = torch.device("cuda", rank) if args.backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    variants = _variants(device, args.extra)
    generator = torch.Generator().manual_seed(rank)
    ids = torch.randint(0, 1000, (args.batch, 64), generator=generator).to(device)
    targets = torch.randint(0, 1000, (args.batch, 64), generator=generator).to(device)
    n = len(variants)
    for turn in range(args.warmup + args.rounds):
        for k in range(n):  # one step each, the order rotated every round
            if device.type == "cuda":
                torch.cuda.synchronize()
            variants[(turn + k) % n].step(ids, targets)
    for variant in variants:
        if variant.mon is not None:
            variant.mon.close()
    if rank == 0:
        _report({v.name: v for v in variants}, world, args)
    tdist.destroy_process_group()


def _kept(values: list[float], args: argparse.Namespace) -> list[float]:
    return values[args.warmup :]


def _fmt(values: list[float], scale: float = 100.0, unit: str = "%") -> str:
    q1, med, q3 = statistics.quantiles([scale * v for v in values], n=4)
    return f"{med:+7.2f} {unit}  (IQR {q1:+.2f} .. {q3:+.2f})"


def _report(by: dict[str, Variant], world: int, args: argparse.Namespace) -> None:
    print(
        f"{world} process(es), backend {args.backend}, {args.rounds} rounds of one step per "
        f"variant (after {args.warmup} warm-up rounds)"
    )
    for name, v in by.items():
        wall, cpu = statistics.median(_kept(v.times, args)), statistics.median(_kept(v.cpu, args))
        print(f"  {name:16s} {1000 * wall:7.2f} ms/step wall, {1000 * cpu:7.2f} ms CPU (medians)")
    for clock in ("wall", "cpu"):
        _ratios(
            {n: _kept(v.times if clock == "wall" else v.cpu, args) for n, v in by.items()}, clock
        )
    _own(by, args)


def _ratios(times: dict[str, list[float]], clock: str) -> None:
    """The paired per-step ratios on one clock."""

    def ratio(a: str, b: str) -> list[float]:
        return [x / y - 1 for x, y in zip(times[a], times[b], strict=True)]

    def extra(name: str) -> list[float]:
        return [
            (r - lo) / d
            for r, lo, d in zip(times[name], times["ddp+local"], times["ddp"], strict=True)
        ]

    ddp_local, single = ratio("ddp+local", "ddp"), ratio("single+monitor", "single")
    what = "wall-clock" if clock == "wall" else "CPU time of the process"
    print(f"per-step ratios on {what}, median and IQR over rounds:")
    print(f"  local overhead (DDP)      {_fmt(ddp_local)}")
    print(f"  local overhead (no DDP)   {_fmt(single)}")
    diff = [a - b for a, b in zip(ddp_local, single, strict=True)]
    print(f"  DDP minus no-DDP          {_fmt(diff, unit='points')}")
    print(f"  reduce extra (vs ddp)     {_fmt(extra('ddp+reduce'))}   target <= 2 %")
    for name in ("ddp+reduce/lg", "ddp+reduce/read"):
        if name in times:
            print(f"  {name + ' extra':25s} {_fmt(extra(name))}")


def _own(by: dict[str, Variant], args: argparse.Namespace) -> None:
    """The Monitor's parts that differ between local and reduce, timed inside each step."""
    plain = _kept(by["ddp"].times, args)
    own = {
        name: [
            a + b
            for a, b in zip(_kept(v.step_time, args), _kept(v.grad_time[1:], args), strict=True)
        ]
        for name, v in by.items()
        if v.mon is not None
    }
    print(
        "the Monitor's own time per step where local and reduce differ (median): mon.step(),\n"
        "and the parameter-gradient hooks (grads=local) or the read after the backward (reduced)"
    )
    for name, variant in by.items():
        if variant.mon is not None:
            inside = statistics.median(_kept(variant.step_time, args))
            grads = statistics.median(_kept(variant.grad_time[1:], args))
            print(
                f"  {name:16s} mon.step() {1000 * inside:5.2f} ms, gradients {1000 * grads:5.2f} ms"
            )
    for name in own:
        if name.startswith("ddp+reduce"):
            local = own["ddp+local"]
            extra = [(r - lo) / d for r, lo, d in zip(own[name], local, plain, strict=True)]
            print(f"  {name} minus ddp+local, per DDP step  {_fmt(extra)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300, help="steps per variant, timed")
    parser.add_argument("--warmup", type=int, default=20, help="rounds dropped first")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--extra", action="store_true", help="also reduce/lg and reduce/read")
    args = parser.parse_args()
    if args.rounds < 4:
        parser.error(f"--rounds must be at least 4, got {args.rounds}")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(worker, args=(args.nproc, port, args), nprocs=args.nproc, join=True)


if __name__ == "__main__":
    main()
