"""The classic trap: a forward hook that "does nothing" because ``.forward()`` was called.

Run: python examples/doctor_forward_bypass.py
"""

from __future__ import annotations

import torch
from torch import nn

import hookscope

counts: list[int] = []


def count_params(module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
    counts.append(sum(p.numel() for p in module.parameters()))


conv = nn.Conv2d(3, 3, 1)
conv.register_forward_hook(count_params)
x = torch.ones(3, 640, 640)

# 1. A session with bypass detection says where the hook was skipped.
with hookscope.session(conv, detect_bypass=True) as s, torch.no_grad():
    conv.forward(x)  # the bug: the hook does not run  # noqa: HS101
    print(f"after conv.forward(x): hook fired {len(counts)} time(s)")
    conv(x)  # the fix: call the module
    print(f"after conv(x):         hook fired {len(counts)} time(s), counted {counts[-1]} params")
for record in s.bypasses:
    print(f"bypass: {record.module_type} at {record.call_site}, skipped {record.hooks_skipped}")
    print(f"   fix: {record.fix}")


# 2. The doctor explains every hook on a whole model after one run.
class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.conv.forward(x)  # noqa: HS101


net = Net()
net.conv.register_forward_hook(count_params)
report = hookscope.doctor(net, x)
print()
print(report)
