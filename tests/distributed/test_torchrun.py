"""``torchrun ... -m hookscope run -M -D --out DIR train.py`` on a DDP script, as users type it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hookscope.sinks import read_jsonl
from tests.distributed.harness import free_port

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import torch, torch.distributed as dist
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 16)
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            return self.head(torch.relu(self.body.forward(x)))  # a bypass for the doctor

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        model(torch.randn(4, 8) * (1 + dist.get_rank())).square().mean().backward()
        opt.step()
    dist.destroy_process_group()
    """
)


def test_torchrun_each_rank_writes_its_files_and_rank_0_merges(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SCRIPT)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    rdzv = ["--master_port", str(free_port())]
    cmd = [
        *torchrun,
        *rdzv,
        "-m",
        "hookscope",
        "run",
        "-M",
        "--every",
        "1",
        "-D",
        "--out",
        "out",
        "train.py",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=400, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out"
    for rank in (0, 1):
        rows = read_jsonl(out / f"monitor.rank{rank}.jsonl")  # strict JSON, every line
        assert [row["step"] for row in rows] == [0, 1, 2, 3]
        assert {row["rank"] for row in rows} == {rank}
        modules = {r["module"] for row in rows for r in row["records"]}
        assert {"head", "body.weight"} <= modules  # DDP's "module." stripped
        doctor = json.loads((out / f"doctor.rank{rank}.json").read_text())
        assert doctor["exit_code"] == 0
        assert [b["module"] for b in doctor["bypasses"]] == ["body"]
        assert (out / "tensorboard" / f"rank{rank}").is_dir()
    assert not (out / "monitor.jsonl").exists()
    assert "merged report of all ranks" in done.stderr
    # rank 0 speaks for all: one doctor table, one summary, no "run hookscope report" hint
    assert done.stderr.count("hookscope run --doctor (rank 0 of 2)") == 1, done.stderr
    assert done.stderr.count("hookscope run --doctor") == 1, done.stderr
    assert done.stderr.count("hookscope run --monitor:") == 1, done.stderr
    assert "HTML report: hookscope report" not in done.stderr
    assert "every rank's report: out/doctor.rank*.json" in done.stderr
    page = (out / "report.html").read_text()
    assert "monitor.rank0.jsonl" in page and "monitor.rank1.jsonl" in page
    assert "rank1" in page
