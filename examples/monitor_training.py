"""Monitor a small CNN while it trains: statistics to JSONL + TensorBoard, alerts, first NaN.

    python examples/monitor_training.py [OUT_DIR]

Writes OUT_DIR/monitor.jsonl and OUT_DIR/tensorboard/ (default OUT_DIR:
runs/monitor-training), then prints the gradient norms of the last step, the alerts,
and where the NaN injected at step 4 first appeared.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

import hookscope
from hookscope.sinks import JsonlSink, TensorBoardSink
from hookscope.zoo import SmallCNN


def main(out_dir: Path) -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    sinks = [JsonlSink(out_dir / "monitor.jsonl"), TensorBoardSink(out_dir / "tensorboard")]
    with hookscope.Monitor(model, sinks=sinks) as mon:
        for step in range(5):
            x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
            if step == 4:  # a NaN sneaks into the second conv's weights
                with torch.no_grad():
                    model.features[4].weight[0, 0, 0, 0] = float("nan")
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            mon.step()
    df = mon.to_pandas()
    last = df[(df.step == 3) & (df.phase == "param") & (df.stat == "norm")]
    print(last[["module", "value"]].to_string(index=False))
    for alert in mon.alerts[:10]:
        print(f"step {alert.step}: {alert.rule} at {alert.phase} {alert.module} {alert.tensor}")
    print("first non-finite:", mon.first_nonfinite)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/monitor-training"))
