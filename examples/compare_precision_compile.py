"""Compare two runs module by module: precision, torch.compile, before/after a change.

Run: .venv/bin/python examples/compare_precision_compile.py   (writes under runs/compare/)
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch

import hookscope
from hookscope.viz.compare import write_comparison_report
from hookscope.zoo import ResNetLike

OUT = Path("runs/compare")

torch.manual_seed(0)
model = ResNetLike((1, 1, 1, 1), num_classes=10).eval()
x = torch.randn(2, 3, 64, 64)

# 1. Precision: fp32 against bf16 autocast. Propagate shows where the error
#    grows; isolate (each module fed the fp32 run's inputs) names the module
#    that introduces it.
autocast = torch.autocast("cpu", dtype=torch.bfloat16)
grown = hookscope.compare(model, autocast, x)
own = hookscope.compare(model, autocast, x, mode="isolate")
print(own)
print("worst own error:", [(r.label, round(r.sqnr_db, 1)) for r in own.worst(3)])
write_comparison_report([grown.to_dict(), own.to_dict()], OUT / "precision.html")

# 2. Compile: eager against torch.compile (names lose their "_orig_mod." prefix).
compiled = hookscope.compare(model, lambda m: torch.compile(m), x)
print("compile culprit:", compiled.culprit)  # None: within rtol/atol everywhere

# 3. Before/after: record now, change something, compare against the recording.
hookscope.record(model, x, path=OUT / "before.safetensors")
after = copy.deepcopy(model)
with torch.no_grad():
    after.layer3[0].conv2.weight.mul_(1.01)  # the "refactor" that changed a layer
diff = hookscope.compare(OUT / "before.safetensors", after, mode="isolate")
print("before/after culprit:", diff.culprit.label if diff.culprit else None)
(OUT / "before_after.json").write_text(diff.render("json"))
print("wrote", OUT / "precision.html", "and", OUT / "before_after.json")
print(json.loads(diff.render("json"))["culprit"])
