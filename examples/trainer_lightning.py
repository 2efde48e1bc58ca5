"""Monitor a Lightning run with one callback (a small MLP on random data, CPU).

Run: python examples/trainer_lightning.py
Results: runs/trainer_lightning/version_0/hookscope/ and the CSV logger's metrics.csv
(columns hookscope/grad_norm, hookscope/alerts, ...).
"""

from __future__ import annotations

import lightning
import torch
from lightning.pytorch.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from hookscope.integrations.lightning import HookscopeCallback


class Regressor(lightning.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


data = TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
callback = HookscopeCallback()
trainer = lightning.Trainer(
    max_steps=20,
    accumulate_grad_batches=2,
    accelerator="cpu",
    logger=CSVLogger("runs", name="trainer_lightning", version=0),
    log_every_n_steps=1,
    callbacks=[callback],
    enable_checkpointing=False,
)
trainer.fit(Regressor(), DataLoader(data, batch_size=16))

assert callback.monitor is not None
print(f"optimizer steps: {trainer.global_step}, recorded: {len(callback.monitor.results)}")
print("alerts:", callback.monitor.alerts or "none")
