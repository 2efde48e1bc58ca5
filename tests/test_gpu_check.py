"""``make gpu-check`` on a machine without CUDA: one clear line, exit code 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_gpu_check_without_cuda_says_so_and_exits_0() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    env.pop("HOOKSCOPE_GPU_CHECK_DEVICE", None)
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_check.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpu-check: no CUDA device (torch ")
    assert done.stdout.count("\n") == 1


def test_gpu_check_table_lists_every_row() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    text = gpu_check.table(
        [("a test", "passed", "1.0", ""), ("overhead gpt2", "measured", "9", "1.1x")]
    )
    lines = text.splitlines()
    assert lines[0].split() == ["check", "outcome", "s", "detail"]
    assert lines[2].startswith("a test") and "1.1x" in lines[3]
