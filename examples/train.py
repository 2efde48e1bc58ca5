"""A plain training script that knows nothing of hookscope: check it from the shell.

python examples/train.py --steps 20
hookscope run --doctor --monitor --out runs/x examples/train.py --steps 20
hookscope report runs/x
"""

from __future__ import annotations

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    steps = parser.parse_args().steps
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x = torch.randn(64, 16)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"trained {steps} steps, last loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
