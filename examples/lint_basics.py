"""Lint a small model file for hook-bypassing calls, then show and apply the fix.

Run: python examples/lint_basics.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hookscope.lint import fix, lint, lint_run, render

SOURCE = """\
import torch
from torch import nn


class Plain:
    def forward(self, x):  # not a module: never flagged
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.plain = Plain()

    def forward(self, x):
        for block in self.blocks:
            x = block.forward(x)  # skips block's hooks
        return self.plain.forward(x)

    def predict(self, x):
        return self.forward(x)  # skips Net's own hooks when predict() is the entry point

    @classmethod
    def build(cls):
        return cls()


def evaluate(model, x):  # no annotation: model.eval() says it is a module
    model.eval()
    return model.forward(x)


def step(layer, x):
    if isinstance(layer, nn.Linear):  # narrowed to a module here
        return layer.forward(x)
    return layer.forward(x)  # unknown here: only the opt-in HS104 guess


def check(net, x):  # unannotated, but every call in this file passes a module
    return net.forward(x)


check(Net.build(), torch.ones(4))  # Net.build is a classmethod returning cls()


def attach(model: nn.Module):
    for m in model.modules():
        m.register_backward_hook(lambda *args: None)  # deprecated, and never removed
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.py"
        path.write_text(SOURCE, encoding="utf-8")

        findings = lint(path, config=False)
        print(render(findings, "text"))

        for file_fix in fix(lint_run(path, config=False)):
            print(file_fix.diff())
            path.write_text(file_fix.fixed, encoding="utf-8")
        print("after --fix:", [f"{f.code}@{f.line}" for f in lint(path, config=False)])


if __name__ == "__main__":
    main()
