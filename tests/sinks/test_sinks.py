"""JSONL (also after SIGKILL), TensorBoard read back with its own reader, pandas."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from hookscope import Monitor, UsageError
from hookscope.monitor import Alert, NonFinite, Record, StepResult
from hookscope.sinks import JsonlSink, TensorBoardSink, read_jsonl
from hookscope.zoo import SmallCNN

ROOT = Path(__file__).resolve().parents[2]


def strict(line: str) -> dict[str, object]:
    def refuse(name: str) -> None:
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(line, parse_constant=refuse)


def test_jsonl_lines_follow_the_contract(tmp_path: Path) -> None:
    path = tmp_path / "run" / "monitor.jsonl"
    model = SmallCNN()
    with Monitor(model, sinks=[JsonlSink(path)]) as mon:
        for _ in range(2):
            model(torch.randn(2, 3, 32, 32)).sum().backward()
            mon.step()
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = strict(lines[0])
    assert set(first) == {
        "step", "rank", "world_size", "ranks", "records", "alerts", "first_nonfinite", "tensors"
    }  # fmt: skip
    assert (first["rank"], first["world_size"], first["ranks"]) == (0, 1, "local")
    assert first["step"] == 0 and first["first_nonfinite"] is None
    records = first["records"]
    assert isinstance(records, list)
    assert set(records[0]) == {"phase", "module", "tensor", "stat", "value"}
    assert len(records) == len(mon.results[0].records)


def test_nonfinite_values_are_strings_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    result = StepResult(
        3,
        (
            Record("forward", "a", "output", "mean", math.nan),
            Record("forward", "a", "output", "max", math.inf),
            Record("forward", "a", "output", "min", -math.inf),
        ),
        (Alert(3, "a", "output", 2.0, "nonfinite", "forward"),),
        NonFinite(3, "forward", "a", "output"),
    )
    sink = JsonlSink(path)
    sink.write(result)
    sink.close()
    line = strict(path.read_text())
    assert [r["value"] for r in line["records"]] == ["nan", "inf", "-inf"]  # type: ignore[index]
    (row,) = read_jsonl(path)
    values = [r["value"] for r in row["records"]]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf]
    assert row["first_nonfinite"] == {
        "step": 3,
        "phase": "forward",
        "module": "a",
        "tensor": "output",
        "rank": 0,
    }
    assert row["alerts"][0]["rule"] == "nonfinite"


def test_read_jsonl_tolerates_a_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "records": []}\n{"step": 1, "rec')
    assert read_jsonl(path) == [{"step": 0, "records": []}]
    path.write_text('{"step": 0\n{"step": 1}\n')
    with pytest.raises(UsageError, match=":1:"):
        read_jsonl(path)


def test_every_complete_line_is_valid_after_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    script = (
        "import sys, torch\n"
        "from hookscope import Monitor\n"
        "from hookscope.sinks import JsonlSink\n"
        "from hookscope.zoo import SmallCNN\n"
        "m = SmallCNN()\n"
        "with Monitor(m, sinks=[JsonlSink(sys.argv[1])]) as mon:\n"
        "    while True:\n"
        "        m(torch.randn(2, 3, 32, 32)).sum().backward()\n"
        "        mon.step()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.read_text().count("\n") >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    text = path.read_text()
    complete = text.split("\n")[: text.count("\n")]
    assert len(complete) >= 3
    steps = [strict(line)["step"] for line in complete]
    assert steps == list(range(len(complete)))
    assert len(read_jsonl(path)) == len(complete)


def test_tensorboard_scalars_read_back(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_dir = tmp_path / "tb"
    model = nn.Sequential(nn.Linear(3, 2))
    with Monitor(model, sinks=[TensorBoardSink(log_dir)]) as mon:
        for _ in range(3):
            model(torch.randn(4, 3)).sum().backward()
            mon.step()
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "forward/0/output/mean" in tags and "param/0.weight/grad/norm" in tags
    events = acc.Scalars("forward/0/output/mean")
    assert [e.step for e in events] == [0, 1, 2]
    expected = mon.to_pandas().query("phase == 'forward' and stat == 'mean'").value.tolist()
    assert [e.value for e in events] == pytest.approx(expected, rel=1e-6)


def test_to_pandas_is_tidy() -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    with Monitor(model) as mon, torch.no_grad():
        model(torch.randn(4, 3))
        mon.step()
    df = mon.to_pandas()
    assert list(df.columns) == ["step", "phase", "module", "tensor", "stat", "value", "rank"]
    assert str(df.value.dtype) == "float64"
    assert set(df["rank"]) == {0}
    assert df.duplicated(["step", "phase", "module", "tensor", "stat"]).sum() == 0


def test_sink_objects_are_checked() -> None:
    with pytest.raises(UsageError, match="write"):
        Monitor(nn.Linear(2, 2), sinks=[object()])  # type: ignore[list-item]
