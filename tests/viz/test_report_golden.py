"""Golden output of the report page for a small hand-written run.

Images are replaced by a placeholder (their bytes depend on the matplotlib
version) and the run path by ``RUN_DIR``. Regenerate on purpose only:
``HOOKSCOPE_REGEN=1 pytest tests/viz/test_report_golden.py``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from torch import nn

import hookscope
from hookscope.viz import load_run, render_report

GOLDEN = Path(__file__).parent / "golden" / "report_small.html"


def _entry(
    step: int, scale: float, alerts: list[dict[str, object]], first: object
) -> dict[str, object]:
    records = []
    for module, mean in (("conv", 0.5), ("relu", 0.25)):
        for stat, value in (("mean", mean * scale), ("std", 1.0), ("zero_frac", 0.5)):
            records.append(
                {
                    "phase": "forward",
                    "module": module,
                    "tensor": "output",
                    "stat": stat,
                    "value": value,
                }
            )
    records.append(
        {
            "phase": "param",
            "module": "conv.weight",
            "tensor": "grad",
            "stat": "norm",
            "value": scale,
        }
    )
    records.append(
        {
            "phase": "param",
            "module": "conv.bias",
            "tensor": "grad",
            "stat": "norm",
            "value": "nan" if first else 0.5,
        }
    )
    return {"step": step, "records": records, "alerts": alerts, "first_nonfinite": first}


def _run(path: Path) -> Path:
    alert = {
        "step": 1,
        "module": "conv.bias",
        "tensor": "grad",
        "value": "nan",
        "rule": "nonfinite",
        "phase": "param",
    }
    first = {"step": 1, "phase": "param", "module": "conv.bias", "tensor": "grad"}
    lines = [_entry(0, 1.0, [], None), _entry(1, 2.0, [alert], first)]
    (path / "monitor.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = hookscope.summary(nn.Sequential(nn.Linear(4, 3), nn.ReLU()), input_size=(1, 4))
    (path / "summary.json").write_text(summary.to_json())
    return path


def test_report_matches_golden(tmp_path: Path) -> None:
    run = load_run(_run(tmp_path))
    page, notes = render_report(run, title="golden <report>")
    assert notes == ()
    page = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:image/png;base64,IMAGE", page)
    page = page.replace(str(tmp_path.resolve()), "RUN_DIR").replace(str(tmp_path), "RUN_DIR")
    page = page.replace("</tr>", "</tr>\n").replace("</section>", "</section>\n")
    if os.environ.get("HOOKSCOPE_REGEN"):
        GOLDEN.write_text(page, encoding="utf-8")
    assert page == GOLDEN.read_text(encoding="utf-8")
