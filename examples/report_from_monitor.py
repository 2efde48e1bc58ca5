"""Train under a Monitor, then draw gradient flow and write the self-contained HTML report.

Run: python examples/report_from_monitor.py   (writes runs/report_example/)
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

import hookscope
from hookscope.sinks import JsonlSink, TensorBoardSink
from hookscope.viz import gradient_flow_plot, write_report
from hookscope.zoo import SmallCNN

run = Path("runs/report_example")
run.mkdir(parents=True, exist_ok=True)
(run / "monitor.jsonl").unlink(missing_ok=True)
torch.manual_seed(0)
model = SmallCNN()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

sinks = [JsonlSink(run / "monitor.jsonl"), TensorBoardSink(run / "tensorboard")]
with hookscope.Monitor(model, sinks=sinks) as mon:
    for _ in range(10):
        x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mon.step()

# A plot straight from the live monitor (or from mon.to_pandas()).
gradient_flow_plot(mon).savefig(run / "gradient_flow.png")

# Optional parts of the run directory: summary and doctor results as JSON.
summary = hookscope.summary(model, input_size=(1, 3, 32, 32))
(run / "summary.json").write_text(json.dumps(summary.to_dict(), default=str))
(run / "doctor.json").write_text(json.dumps(hookscope.doctor(model, x).to_dict(), default=str))

result = write_report(run)  # the same as: hookscope report runs/report_example
print(f"wrote {result.path}; absent parts: {', '.join(result.missing) or 'none'}")
