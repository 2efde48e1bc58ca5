"""Monitor a torch.compile'd training loop: open the Monitor first, then compile.

.venv/bin/python examples/monitor_compiled.py   # writes runs/compiled/monitor.jsonl
"""

from __future__ import annotations

from pathlib import Path

import torch

import hookscope
from hookscope.sinks import JsonlSink
from hookscope.zoo import SmallCNN


def main() -> None:
    out = Path("runs/compiled")
    out.mkdir(parents=True, exist_ok=True)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with hookscope.Monitor(model, sinks=[JsonlSink(out / "monitor.jsonl")]) as mon:
        compiled = torch.compile(model, fullgraph=True)  # after the Monitor: hooks traced in
        for _ in range(3):
            x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
            torch.nn.functional.cross_entropy(compiled(x), y).backward()
            opt.step()
            opt.zero_grad()
            result = mon.step()
    assert result is not None
    print(f"{len(result.records)} records, missing phases: {result.missing or 'none'}")
    print(mon.to_pandas().query("stat == 'norm'").tail(5).to_string(index=False))


if __name__ == "__main__":
    main()
