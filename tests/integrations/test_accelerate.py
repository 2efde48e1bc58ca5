"""accelerate loops with `sync_step`: one Monitor step per optimizer step, bf16 autocast on CPU."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

accelerate = pytest.importorskip("accelerate")

import hookscope  # noqa: E402
from hookscope.integrations.accelerate import sync_step  # noqa: E402

BATCHES = 8


@pytest.mark.parametrize("accumulation", [1, 2])
def test_sync_step_closes_one_step_per_optimizer_step(accumulation: int) -> None:
    accelerator = accelerate.Accelerator(
        cpu=True, gradient_accumulation_steps=accumulation, mixed_precision="bf16"
    )
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(BATCHES * 4, 6, generator=g), torch.randn(BATCHES * 4, 1))
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, DataLoader(data, batch_size=4))
    norms: list[float] = []
    updates = 0
    with hookscope.Monitor(accelerator.unwrap_model(model)) as mon:
        for x, y in loader:
            with accelerator.accumulate(model):
                out = model(x)
                assert out.dtype == torch.float32  # accelerate's fp32-output wrapper ran
                accelerator.backward(nn.functional.mse_loss(out, y))
                if accelerator.sync_gradients:
                    norms.append(float(accelerator.clip_grad_norm_(model.parameters(), math.inf)))
                    updates += 1
                optimizer.step()
                optimizer.zero_grad()
            sync_step(mon, accelerator)
    assert updates == BATCHES // accumulation
    assert [r.step for r in mon.results] == list(range(updates))
    ours = [
        math.sqrt(sum(r.value**2 for r in res.records if r.phase == "param" and r.stat == "norm"))
        for res in mon.results
    ]
    assert ours == pytest.approx(norms, rel=1e-5)


def test_sync_step_refuses_what_is_not_an_accelerator() -> None:
    with hookscope.Monitor(nn.Linear(2, 2)) as mon, pytest.raises(ValueError, match="object"):
        sync_step(mon, object())
