"""Under DDP the callbacks' ``hookscope/grad_norm`` is the trainer's: the all-reduced gradient's.

Two real gloo ranks train a DDP model with gradient accumulation (2 micro-
batches, ``no_sync`` on the first) through `TrainingMonitor`, as the trainer
callbacks drive it; after each optimizer step the logged norm must equal the
norm of ``.grad`` as the optimizer sees it (the same on both ranks). Asking
for ``grads="local"`` logs each rank's own norm under another name.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import torch.distributed as tdist
from torch import nn

from hookscope.integrations.training import TrainingMonitor
from tests.distributed.harness import init, spawn
from tests.distributed.workers import Tiny, batch

STEPS = 3


def worker(rank: int, port: int, out: str, grads: str | None) -> None:
    init(rank, port)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tiny())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kwargs = {} if grads is None else {"grads": grads}
    run = TrainingMonitor(doctor=False, log_stats=(), monitor_kwargs=kwargs)
    run.start(model, Path(out) / f"run{rank}")
    rows = []
    for step in range(STEPS):
        opt.zero_grad()
        with model.no_sync():  # accumulation: the first micro-batch is not all-reduced
            model(batch(2 * step, rank)).square().mean().backward()
        model(batch(2 * step + 1, rank)).square().mean().backward()
        seen = math.sqrt(sum(float(p.grad.square().sum()) for p in model.parameters()))
        logs = run.step(step)
        opt.step()
        rows.append([seen, logs])
    run.close()
    tdist.destroy_process_group()
    Path(out, f"rank{rank}.json").write_text(json.dumps(rows))


def _rows(out: Path) -> list[list[list[object]]]:
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


@pytest.mark.slow
def test_grad_norm_is_the_reduced_gradients(tmp_path: Path) -> None:
    spawn(worker, str(tmp_path), None, timeout=240)
    ranks = _rows(tmp_path)
    for step in range(STEPS):
        (seen0, logs0), (seen1, logs1) = ranks[0][step], ranks[1][step]
        assert seen0 == pytest.approx(seen1, rel=1e-6)  # what the optimizer sees
        for seen, logs in ((seen0, logs0), (seen1, logs1)):
            assert isinstance(logs, dict)
            assert logs["hookscope/grad_norm"] == pytest.approx(seen, rel=1e-5)
            assert "hookscope/grad_norm_local" not in logs


@pytest.mark.slow
def test_a_local_norm_is_named_local(tmp_path: Path) -> None:
    spawn(worker, str(tmp_path), "local", timeout=240)
    ranks = _rows(tmp_path)
    for step in range(STEPS):
        (seen0, logs0), (_, logs1) = ranks[0][step], ranks[1][step]
        assert isinstance(logs0, dict) and isinstance(logs1, dict)
        assert "hookscope/grad_norm" not in logs0 and "hookscope/grad_norm" not in logs1
        local0, local1 = logs0["hookscope/grad_norm_local"], logs1["hookscope/grad_norm_local"]
        assert local0 != pytest.approx(local1)  # each rank's own gradient
        assert local0 != pytest.approx(seen0)
