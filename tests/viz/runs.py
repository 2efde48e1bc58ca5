"""Build monitor run directories by hand, in the documented ``monitor.jsonl`` format.

The records come from really training `SmallCNN` for a few steps: forward
statistics of every leaf output (taken with `hookscope.capture`) and
per-module parameter-gradient norms. This keeps the report tests independent
of the Monitor's implementation while following its file format.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path
from typing import Any

import torch

import hookscope
from hookscope.zoo import SmallCNN


def _jsonable(value: float) -> float | str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def _forward_stats(name: str, out: torch.Tensor) -> list[dict[str, Any]]:
    x = out.float()
    finite = x[torch.isfinite(x)]
    if finite.numel() < 2:  # all NaN after BatchNorm of a poisoned batch
        finite = torch.tensor([math.nan, math.nan])
    stats = {
        "mean": finite.mean(),
        "std": finite.std(),
        "min": finite.min(),
        "max": finite.max(),
        "absmax": finite.abs().max(),
        "rms": finite.pow(2).mean().sqrt(),
        "zero_frac": (x == 0).float().mean(),
        "nan_count": torch.isnan(x).sum(),
        "inf_count": torch.isinf(x).sum(),
    }
    return [
        {"phase": "forward", "module": name, "tensor": "output", "stat": s, "value": float(v)}
        for s, v in stats.items()
    ]


def train_records(steps: int = 4, *, poison_step: int | None = None) -> list[dict[str, Any]]:
    """``monitor.jsonl`` entries from ``steps`` SGD steps of `SmallCNN` on random data.

    With ``poison_step``, that step's input holds a NaN, so the first conv
    output is the first non-finite tensor. Cached per arguments (a deep copy
    is returned, so callers may change it).
    """
    return copy.deepcopy(_train_records(steps, poison_step))


@functools.cache
def _train_records(steps: int, poison_step: int | None) -> list[dict[str, Any]]:
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    entries = []
    for step in range(steps):
        x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
        if step == poison_step:
            x[0, 0, 0, 0] = math.nan
        with hookscope.capture(model, leaves_only=True) as cache:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            records = [r for key, t in cache.items() for r in _forward_stats(key, t)]
        opt.zero_grad()
        loss.backward()
        opt.step()
        for pname, param in model.named_parameters():
            module, _, tensor = pname.rpartition(".")
            assert param.grad is not None
            norm = float(param.grad.norm())
            records.append(
                {
                    "phase": "param",
                    "module": module,
                    "tensor": tensor,
                    "stat": "norm",
                    "value": norm,
                }
            )
        nonfinite = [r for r in records if r["stat"] == "nan_count" and r["value"] > 0]
        first = None
        if nonfinite:
            first = {
                "step": step,
                "phase": "forward",
                "module": nonfinite[0]["module"],
                "tensor": "output",
            }
        alerts = [
            {
                "step": step,
                "module": r["module"],
                "tensor": r["tensor"],
                "value": r["value"],
                "rule": "nonfinite",
            }
            for r in nonfinite
        ]
        for r in records:
            r["value"] = _jsonable(r["value"])
        entries.append(
            {"step": step, "records": records, "alerts": alerts, "first_nonfinite": first}
        )
    return entries


def write_run(path: Path, entries: list[dict[str, Any]]) -> Path:
    """Write ``monitor.jsonl`` (one entry a line) into ``path``; returns ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(entry) for entry in entries]
    (path / "monitor.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
