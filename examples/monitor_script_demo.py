"""Monitor every model a script runs, without changing the script.

    python examples/monitor_script_demo.py [OUT_DIR]

The same as ``hookscope run --monitor train.py --out OUT_DIR``: the training
code below never mentions hookscope; `monitor_script` finds the model when it
is first called, starts a step each time it is called again, and writes
the run store OUT_DIR/monitor/ (read back with ``hookscope.read_run``) and
OUT_DIR/tensorboard/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

import hookscope
from hookscope.monitor.script import monitor_script


def train() -> None:
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(20):
        x = torch.randn(64, 10)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/monitor-script")
    with monitor_script(out, every=5) as watcher:
        train()
    frame = hookscope.read_run(out)
    steps = frame.step.nunique()
    print(f"{steps} steps recorded in {out / 'monitor'}; alerts: {watcher.alerts}")
