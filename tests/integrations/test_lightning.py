"""HookscopeCallback in a real Lightning Trainer: a tiny MLP, CPU, a few steps, metrics read back."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

L = pytest.importorskip("lightning.pytorch")

from lightning.pytorch.loggers import CSVLogger  # noqa: E402
from lightning.pytorch.utilities import grad_norm  # noqa: E402

from hookscope.integrations.lightning import HookscopeCallback  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning:lightning.*"),
    pytest.mark.filterwarnings("ignore::UserWarning:lightning_fabric.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:lightning_utilities.*"),
    # Lightning 2.6 on torch 2.13: torch's pytree deprecates the LeafSpec Lightning builds.
    pytest.mark.filterwarnings("ignore:.*LeafSpec.* is deprecated:FutureWarning"),
]

STEPS = 4


class Tiny(L.LightningModule):
    """Logs the total gradient norm itself, as users do with Lightning's ``grad_norm``."""

    def __init__(self, poison_at: int | None = None) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
        self.poison_at = poison_at

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if self.poison_at is not None and self.global_step == self.poison_at:
            with torch.no_grad():
                self.net[2].weight[0, 0] = math.nan
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def on_before_optimizer_step(self, optimizer: Any) -> None:
        self.log("grad_norm", grad_norm(self, norm_type=2)["grad_2.0_norm_total"])

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(
    tmp_path: Path, module: Tiny, accumulation: int, callback: HookscopeCallback, log_every: int = 1
) -> Any:
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(64, 6, generator=g), torch.randn(64, 1, generator=g))
    trainer = L.Trainer(
        max_steps=STEPS,
        accumulate_grad_batches=accumulation,
        accelerator="cpu",
        devices=1,
        logger=CSVLogger(tmp_path, name="run", version=0),
        log_every_n_steps=log_every,
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, DataLoader(data, batch_size=4))
    return trainer


def _metrics(tmp_path: Path) -> list[dict[str, str]]:
    with open(tmp_path / "run" / "version_0" / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("accumulation", [1, 2])
def test_one_step_per_optimizer_step_with_the_logged_grad_norm(
    tmp_path: Path, accumulation: int
) -> None:
    callback = HookscopeCallback()
    trainer = _fit(tmp_path, Tiny(), accumulation, callback)
    assert trainer.global_step == STEPS
    assert callback.monitor is not None
    assert [r.step for r in callback.monitor.results] == list(range(STEPS))

    rows = [r for r in _metrics(tmp_path) if r.get("hookscope/grad_norm")]
    assert [int(r["step"]) for r in rows] == list(range(STEPS))
    for row in rows:
        assert float(row["hookscope/grad_norm"]) == pytest.approx(float(row["grad_norm"]), rel=1e-5)
    out = tmp_path / "run" / "version_0" / "hookscope"
    assert len((out / "monitor.jsonl").read_text().splitlines()) == STEPS
    assert json.loads((out / "doctor.json").read_text())["bypasses"] == []


def test_planted_nan_and_its_alert_reach_the_lightning_logs(tmp_path: Path) -> None:
    callback = HookscopeCallback(doctor=False)
    _fit(tmp_path, Tiny(poison_at=2), 1, callback)
    assert callback.monitor is not None
    first = callback.monitor.first_nonfinite
    assert first is not None
    assert (first.step, first.phase, first.module) == (2, "forward", "net.2")
    [row] = [r for r in _metrics(tmp_path) if r.get("hookscope/first_nonfinite_step")][:1]
    assert (int(row["step"]), float(row["hookscope/first_nonfinite_step"])) == (2, 2.0)
    assert float(row["hookscope/alert/nonfinite/forward/net.2/output"]) > 0


def test_default_cadence_is_log_every_n_steps_and_the_nan_between_is_exact(
    tmp_path: Path,
) -> None:
    callback = HookscopeCallback(doctor=False)
    _fit(tmp_path, Tiny(poison_at=1), 1, callback, log_every=3)
    assert callback.monitor is not None and callback.monitor.every == 3
    first = callback.monitor.first_nonfinite
    assert first is not None
    assert (first.step, first.phase, first.module) == (1, "forward", "net.2")
    recorded = [r.step for r in callback.monitor.results if not r.sentinel]
    assert recorded == [s for s in range(STEPS) if s % 3 == 0]
