"""A 2-process NCCL worker (gloo for a CPU dry run): one GPU per rank, ``ranks="reduce"``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as tdist
from torch import nn

import hookscope


def reduce_worker(rank: int, port: int, backend: str, out: str) -> None:
    """Each rank monitors its half of a batch; the reduced norm must be the whole batch's."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank))
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    tdist.init_process_group(backend, rank=rank, world_size=2)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)).to(device)
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)).to(device)
        half = x[rank * 4 : (rank + 1) * 4]
        with hookscope.Monitor(model, ranks="reduce", grads=False) as mon, torch.no_grad():
            model(half)
            result = mon.step()
            assert result is not None
            records = {(r.module, r.stat): r.value for r in result.records}
        with torch.no_grad():
            whole = model[0](x).double()
        if rank == 0:
            got = {"norm": records[("0", "rms")] * (whole.numel() ** 0.5)}
            got["expected"] = float(whole.norm())
            Path(out).write_text(json.dumps(got))
    finally:
        tdist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)
