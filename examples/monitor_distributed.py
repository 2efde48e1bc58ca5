"""Monitor a 2-process DDP training run on CPU, then read every rank back.

    python examples/monitor_distributed.py        # writes runs/distributed/

Each rank writes its own ``monitor.rank<N>.jsonl``; with ``ranks="reduce"``
every rank holds the statistics of both ranks' tensors combined, and
``grads="reduced"`` reports the gradients after DDP's all-reduce. The same
script under torchrun needs no spawn: see docs/guides/distributed.md.
"""

from __future__ import annotations

import gc
import os
import socket
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import hookscope
from hookscope.sinks import JsonlSink
from hookscope.viz import write_report

OUT = Path("runs/distributed")


def train(rank: int) -> None:
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sinks = [JsonlSink(OUT / "monitor.jsonl")]  # rank N writes monitor.rankN.jsonl
    with hookscope.Monitor(model, ranks="reduce", grads="reduced", sinks=sinks) as mon:
        for _ in range(10):
            x = torch.randn(32, 16) * (1 + rank)  # the ranks see different data
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
            mon.step()  # a collective here: every rank calls it
    if rank == 0:
        frame = mon.to_pandas()
        print(frame.query("phase == 'param' and stat == 'norm'").tail(4))
        print("first NaN/Inf:", mon.first_nonfinite)


def worker(rank: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    train(rank)
    # The model is gone with train()'s frame; collecting its reference cycles
    # frees the process group's gloo threads before the interpreter's teardown.
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    mp.spawn(worker, args=(free,), nprocs=2, join=True)
    print(sorted(p.name for p in OUT.glob("*.jsonl")))
    print("report:", write_report(OUT).path)
