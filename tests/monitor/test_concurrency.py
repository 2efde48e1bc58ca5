"""Monitor and ``hookscope run --monitor`` under threads, forks, several processes, failing sinks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope
from hookscope.cli.main import main
from hookscope.errors import HookscopeWarning
from hookscope.monitor.records import StepResult
from hookscope.sinks import JsonlSink, read_jsonl

MODEL = """
import os, sys, time
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
"""


def _steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


def _run(
    tmp_path: Path, body: str, out: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(MODEL + textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, "-m", "hookscope", "run", "--monitor", "--every", "1", "--out", str(out), str(script)],
        capture_output=True, text=True, timeout=timeout, cwd=tmp_path,
    )  # fmt: skip


def test_two_threads_on_one_model_get_one_monitor(tmp_path: Path) -> None:
    script = tmp_path / "threads.py"
    script.write_text(
        MODEL
        + textwrap.dedent(
            """
            import threading
            def work():
                with torch.no_grad():  # forward only, so each call closes a step (no backward
                    for _ in range(20):  # of one thread races the other's step)
                        model(torch.randn(4, 8))
            threads = [threading.Thread(target=work) for _ in range(2)]
            for t in threads: t.start()
            for t in threads: t.join(timeout=120)
            assert not any(t.is_alive() for t in threads), "a monitored thread hung"
            """
        )
    )
    out = tmp_path / "out"
    assert main(["run", "--monitor", "--every", "1", "--out", str(out), str(script)]) == 0
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["monitor.jsonl"]
    steps = _steps(out / "monitor.jsonl")  # every line is valid JSON
    assert steps == sorted(set(steps)) and len(steps) >= 20


def test_forked_children_record_nothing_and_never_hang(tmp_path: Path) -> None:
    body = """
    import multiprocessing as mp
    def child(i):
        for _ in range(3):
            model.zero_grad()  # a step per forward: no optimizer, no accumulation
            model(torch.randn(4, 8)).sum().backward()
    for _ in range(4):
        model.zero_grad()  # a step per forward: no optimizer, no accumulation
        model(torch.randn(4, 8)).sum().backward()
    procs = [mp.get_context("fork").Process(target=child, args=(i,)) for i in range(2)]
    for p in procs: p.start()
    for p in procs: p.join()
    print("codes", [p.exitcode for p in procs])
    for _ in range(4):
        model.zero_grad()  # a step per forward: no optimizer, no accumulation
        model(torch.randn(4, 8)).sum().backward()
    """
    out = tmp_path / "out"
    done = _run(tmp_path, body, out)  # TensorBoard sink on: children used to block in a futex
    assert done.returncode == 0, done.stderr
    assert "codes [0, 0]" in done.stdout
    assert _steps(out / "monitor.jsonl") == list(range(8))  # the parent's steps only, once
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["monitor.jsonl"]


def test_two_processes_into_one_out_never_share_a_file(tmp_path: Path) -> None:
    body = """
    def wait_for(tag):
        open(f"{tag}.{os.getpid()}", "w").close()
        deadline = time.time() + 90
        while len([f for f in os.listdir(".") if f.startswith(tag + ".")]) < 2:
            assert time.time() < deadline, "the other process never came"
            time.sleep(0.05)
    wait_for("ready")
    for _ in range(30):
        model.zero_grad()  # a step per forward: no optimizer, no accumulation
        model(torch.randn(4, 8)).sum().backward()
    wait_for("done")
    """
    out = tmp_path / "out"
    script = tmp_path / "train.py"
    script.write_text(MODEL + textwrap.dedent(body))
    cmd = [
        sys.executable,
        "-m",
        "hookscope",
        "run",
        "--monitor",
        "--every",
        "1",
        "--out",
        str(out),
        str(script),
    ]
    procs = [
        subprocess.Popen(
            cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    files = sorted(out.glob("monitor*.jsonl"))
    assert [f.name for f in files][0] == "monitor.jsonl" and len(files) == 2
    assert files[1].name.startswith("monitor.pid")
    for file in files:
        assert _steps(file) == list(range(30))  # each process's steps, whole
    report = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(report)]) == 0
    assert "monitor.pid" in report.read_text()


class _Broken:
    def write(self, result: StepResult) -> None:
        raise RuntimeError("sink bug")

    def close(self) -> None:
        pass


def test_a_failing_sink_is_disabled_and_the_others_keep_going(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    good = tmp_path / "good.jsonl"
    sinks = [JsonlSink("/dev/full"), _Broken(), JsonlSink(good)]
    monitor = hookscope.Monitor(model, sinks=sinks)
    with pytest.warns(HookscopeWarning, match="disabled") as caught, monitor as mon:
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
            mon.step()
    assert len(caught) == 2  # once per failing sink, not once per step
    assert "No space left" in str(caught[0].message) and "sink bug" in str(caught[1].message)
    assert [row["step"] for row in read_jsonl(good)] == [0, 1, 2]


def test_a_failing_sink_raises_under_on_error_raise() -> None:
    model = nn.Linear(4, 4)
    with hookscope.Monitor(model, sinks=[_Broken()], on_error="raise") as mon:
        model(torch.randn(2, 4))
        with pytest.raises(RuntimeError, match="sink bug"):
            mon.step()
