"""An accelerate loop (bf16 autocast on CPU, gradient accumulation 4) monitored per optimizer step.

Run: python examples/trainer_accelerate.py
Results: runs/trainer_accelerate/monitor.jsonl.
"""

from __future__ import annotations

import accelerate
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import hookscope
from hookscope.integrations.accelerate import sync_step
from hookscope.sinks import JsonlSink

accelerator = accelerate.Accelerator(
    cpu=True, mixed_precision="bf16", gradient_accumulation_steps=4
)
model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.randn(512, 16), torch.randn(512, 1)), batch_size=16)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

sinks = [JsonlSink("runs/trainer_accelerate/monitor.jsonl")]
with hookscope.Monitor(accelerator.unwrap_model(model), sinks=sinks) as mon:
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        sync_step(mon, accelerator)  # a step closes only when the weights were updated

print(f"batches: {len(loader)}, optimizer steps recorded: {len(mon.results)}")  # 32 and 8
print(mon.to_pandas().query("phase == 'param' and stat == 'norm'").tail(4))
