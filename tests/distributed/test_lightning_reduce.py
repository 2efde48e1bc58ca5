"""Lightning with ``ranks="reduce"`` on 2 real gloo ranks: every step's values reach the logger.

A step's values are logged a step late (not waiting for its all-reduces);
at the end of training the last two steps' values used to share one logging
step and the logger kept one of them.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as tdist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.distributed.harness import init, spawn

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]
STEPS = 5


def worker(rank: int, port: int, out: str) -> None:
    import lightning.pytorch as L
    from lightning.pytorch.loggers import CSVLogger

    from hookscope.integrations.lightning import HookscopeCallback

    class Tiny(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))

        def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
            x, y = batch
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    init(rank, port)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(rank)
    data = TensorDataset(torch.randn(64, 6, generator=g), torch.randn(64, 1, generator=g))
    callback = HookscopeCallback(doctor=False, ranks="reduce")
    trainer = L.Trainer(
        max_steps=STEPS,
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        logger=CSVLogger(out, name="run", version=0),
        log_every_n_steps=1,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    trainer.fit(Tiny(), DataLoader(data, batch_size=4))
    assert callback.monitor is not None
    from hookscope.integrations.training import total_grad_norm

    norms = [total_grad_norm(r.records) for r in callback.monitor.results]
    Path(out, f"norms{rank}.json").write_text(json.dumps(norms))
    tdist.barrier()
    tdist.destroy_process_group()


def test_every_steps_grad_norm_reaches_the_lightning_logger(tmp_path: Path) -> None:
    pytest.importorskip("lightning.pytorch")
    spawn(worker, str(tmp_path), timeout=300)
    norms = json.loads((tmp_path / "norms0.json").read_text())
    assert len(norms) == STEPS
    with open(tmp_path / "run" / "version_0" / "metrics.csv", newline="") as f:
        rows = [row for row in csv.DictReader(f) if row.get("hookscope/grad_norm")]
    # each step's values one logging step late: step k's at k + 1
    rows.sort(key=lambda row: int(row["step"]))
    assert [int(row["step"]) for row in rows] == list(range(1, STEPS + 1))
    assert [float(row["hookscope/grad_norm"]) for row in rows] == pytest.approx(norms, rel=1e-6)
