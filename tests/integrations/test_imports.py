"""Importing hookscope never imports a trainer; the integrations are the only door to them."""

from __future__ import annotations

import json
import subprocess
import sys

TRAINERS = ("transformers", "lightning", "pytorch_lightning", "accelerate")


def _imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {TRAINERS!r} if m in sys.modules]))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    names: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return names


def test_hookscope_and_its_features_import_no_trainer() -> None:
    code = (
        "import torch, hookscope, hookscope.integrations\n"
        "from hookscope.integrations.accelerate import sync_step\n"
        "hookscope.Monitor, hookscope.doctor, hookscope.summary, hookscope.session\n"
        "import hookscope.monitor.script, hookscope.cli.run\n"
        "m = torch.nn.Linear(2, 2)\n"
        "with hookscope.Monitor(m) as mon:\n    m(torch.ones(1, 2)); mon.step()"
    )
    assert _imported_after(code) == []
