"""``make gpu-check``: every CUDA check and the Monitor overhead on CUDA, one summary table.

On a machine with a CUDA device this runs, in under 8 minutes:

* the CUDA tests (``tests/gpu``, marker ``cuda``, and the host-sync test of
  ``tests/monitor``): no host synchronisation inside a monitored forward and
  backward, statistics equal to CPU float64 (eager and ``fused=True``), a
  compiled model on the device, NCCL with 2 processes when there are 2 GPUs;
* ``benchmarks/monitor_overhead.py --device cuda --quick`` on GPT-2 and on the
  ResNet-50-shaped CNN (``hookscope.zoo.resnet50_like``, no torchvision):
  the Monitor's time as a multiple of the plain forward's, defaults and ``fused=True``.

It prints one table and exits 1 when a check failed. Without a CUDA device
it prints a "no CUDA device" line and exits 0. ``HOOKSCOPE_GPU_CHECK_DEVICE=cpu``
runs the same on the CPU (a dry run of the checks themselves, slow).

    .venv/bin/python benchmarks/gpu_check.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
#: The CUDA tests: this folder's, and the host-sync test that predates it.
TESTS = [
    "tests/gpu",
    "tests/monitor/test_monitor.py::test_no_host_sync_inside_a_cuda_forward_and_backward",
]
#: Seconds for the tests, and for each benchmark (8 minutes in all, with room).
TEST_LIMIT, BENCH_LIMIT = 270.0, 90.0
#: The benchmark rows reported, as printed by monitor_overhead.py.
ROWS = ("hookscope defaults", "hookscope fused=True")

Row = tuple[str, str, str, str]


def _device() -> str | None:
    if os.environ.get("HOOKSCOPE_GPU_CHECK_DEVICE") == "cpu":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else None


def _run(cmd: list[str], limit: float, env: dict[str, str]) -> tuple[int, str, float]:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit, check=False
        )
        code, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        code, out = 124, f"{partial}timed out after {limit:g} s"
    return code, out, time.perf_counter() - start


def run_tests(env: dict[str, str]) -> tuple[list[Row], bool]:
    """The CUDA tests, one row each (outcome, seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider"]
        code, out, took = _run([*cmd, f"--junitxml={junit}"], TEST_LIMIT, env)
        if not junit.exists():
            return [("tests", "ERROR", f"{took:.0f}", out.strip().splitlines()[-1:][0])], False
        rows: list[Row] = []
        for case in ET.parse(junit).iter("testcase"):
            outcome, detail = "passed", ""
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    outcome = {"failure": "FAILED", "error": "ERROR"}.get(child.tag, "skipped")
                    detail = (
                        (child.get("message") or "").splitlines()[0][:70]
                        if child.get("message")
                        else ""
                    )
            rows.append(
                (case.get("name", "?"), outcome, f"{float(case.get('time', 0)):.1f}", detail)
            )
    return rows, code in (0, 5)


def run_benchmark(model: str, device: str, env: dict[str, str]) -> tuple[list[Row], bool]:
    """monitor_overhead.py on ``model``: the Monitor's wall time as a multiple of the plain forward's."""
    cmd = [sys.executable, "benchmarks/monitor_overhead.py", "--model", model]
    cmd += ["--device", device, "--quick", "--reps", "3"]
    code, out, took = _run(cmd, BENCH_LIMIT, env)
    rows: list[Row] = []
    for line in out.splitlines():
        for label in ROWS:
            if line.startswith(label):
                ratios = re.findall(r"(\d+\.\d+) \(", line)
                shown = f"{ratios[0]}x plain" + (
                    f", {ratios[-1]}x plain again" if len(ratios) > 1 else ""
                )
                rows.append(
                    (
                        f"overhead {model}: {label.removeprefix('hookscope ')}",
                        "measured",
                        f"{took:.0f}",
                        shown,
                    )
                )
    if code != 0 or not rows:
        tail = out.strip().splitlines()[-1:] or [""]
        return [(f"overhead {model}", "FAILED", f"{took:.0f}", tail[0][:70])], False
    return rows, True


def table(rows: list[Row]) -> str:
    """The summary: check, outcome, seconds, detail."""
    header: Row = ("check", "outcome", "s", "detail")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip()
        for r in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> int:
    device = _device()
    if device is None:
        built = torch.version.cuda or "none"
        print(
            f"gpu-check: no CUDA device (torch {torch.__version__}, CUDA build {built}): nothing checked"
        )
        return 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU dry run"
    count = torch.cuda.device_count() if device == "cuda" else 0
    print(f"gpu-check on {name} ({count} GPU(s)), torch {torch.__version__}", flush=True)
    rows, ok = run_tests(env)
    for model in ("gpt2", "resnet50"):
        bench, fine = run_benchmark(model, device, env)
        rows += bench
        ok = ok and fine
    print(table(rows))
    print(f"gpu-check: {'all passed' if ok else 'FAILED'} in {time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
