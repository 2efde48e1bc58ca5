"""W&B (offline) and MLflow (local file store) sinks: the same per-step values as the JSONL sink.

Each tracker is read back with its own client or file format: wandb's
protobuf records of the offline run file, MLflow's ``MlflowClient``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from hookscope import Monitor, UsageError
from hookscope.errors import MissingExtraError
from hookscope.sinks import JsonlSink, MlflowSink, WandbSink, read_jsonl
from hookscope.sinks.metrics import DEFAULT_STATS, MetricSelection
from tests.monitor.models import NaNOut
from tests.sinks import wandb_files

STEPS = 4
NAN_STEP = 2


class Pair(nn.Module):
    """Returns two tensors: output paths ``output[0]`` and ``output[1]``."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * 2, x - 1


class Net(nn.Module):
    """Linear, Tanh, a NaN switch, a tuple-returning module, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.act = nn.Tanh()
        self.mid = NaNOut()
        self.pair = Pair()
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.pair(self.mid(self.act(self.fc1(x))))
        return self.fc2(a + b)


def train(tmp_path: Path, tracker: Any) -> list[dict[str, Any]]:
    """``STEPS`` SGD steps (NaN from step `NAN_STEP`) into the JSONL sink and ``tracker``."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    jsonl = tmp_path / "monitor.jsonl"
    with Monitor(model, sinks=[JsonlSink(jsonl), tracker], update_ratio=True) as mon:
        for step in range(STEPS):
            model.mid.armed = step >= NAN_STEP
            opt.zero_grad()
            model(torch.randn(4, 6)).square().mean().backward()
            opt.step()
            mon.step()
    return read_jsonl(jsonl)


def name(record: dict[str, Any]) -> str:
    tensor = record["tensor"].replace("[", ".").replace("]", "")
    return f"hookscope/{record['phase']}/{record['module']}/{tensor}/{record['stat']}"


def expected(lines: list[dict[str, Any]], keep: Any = None) -> dict[int, dict[str, float]]:
    """``{step: {metric: value}}`` from the JSONL lines, the records ``keep(record)`` accepts."""
    found = {}
    for line in lines:
        values = {name(r): r["value"] for r in line["records"] if keep is None or keep(r)}
        values["hookscope/alerts"] = float(len(line["alerts"]))
        found[line["step"]] = values
    return found


def same(a: dict[int, dict[str, float]], b: dict[int, dict[str, float]]) -> None:
    assert a.keys() == b.keys()
    for step in a:
        assert a[step].keys() == b[step].keys(), step
        for key, value in a[step].items():
            other = b[step][key]
            assert (math.isnan(value) and math.isnan(other)) or value == other, (step, key)


@pytest.fixture
def offline_wandb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytest.importorskip("wandb", reason="wandb comes with the dev extra")
    home = tmp_path / "wandb-home"
    for var in ("WANDB_DIR", "WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(home))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "120")  # the wandb service process must start
    return home


@pytest.mark.slow
def test_wandb_offline_run_has_the_jsonl_values(tmp_path: Path, offline_wandb: Path) -> None:
    sink = WandbSink(project="hookscope-test", dir=tmp_path, stats="all")
    lines = train(tmp_path, sink)
    rows = wandb_files.history(wandb_files.run_file(tmp_path))
    assert len(rows) == STEPS == len(lines)
    logged = {
        int(row["hookscope/step"]): {
            k: v for k, v in row.items() if not k.startswith("_") and k != "hookscope/step"
        }
        for row in rows
    }
    want = expected(lines)
    same(logged, want)
    assert "hookscope/forward/pair/output.1/mean" in want[0]
    assert math.isnan(logged[NAN_STEP]["hookscope/forward/mid/output/mean"])
    summary = wandb_files.summary(wandb_files.run_file(tmp_path))
    assert summary["hookscope/first_nonfinite"] == f"step {NAN_STEP}: mid (forward, output)"


@pytest.mark.slow
def test_wandb_default_subset_and_module_filter(tmp_path: Path, offline_wandb: Path) -> None:
    sink = WandbSink(project="hookscope-test", dir=tmp_path, modules=["fc*"])
    lines = train(tmp_path, sink)
    rows = wandb_files.history(wandb_files.run_file(tmp_path))
    logged = {
        int(row.pop("hookscope/step")): {k: v for k, v in row.items() if not k.startswith("_")}
        for row in rows
    }

    def keep(record: dict[str, Any]) -> bool:
        default = record["stat"] in DEFAULT_STATS[record["phase"]]
        return default and record["module"].startswith("fc")

    same(logged, expected(lines, keep))
    assert "hookscope/param/fc1.weight/param/update_ratio" in logged[1]
    assert not any("/act/" in key or key.endswith("/mean") for key in logged[0])


@pytest.mark.slow
def test_wandb_logs_into_the_active_run_and_leaves_it_open(
    tmp_path: Path, offline_wandb: Path
) -> None:
    import wandb

    run = wandb.init(project="hookscope-test", dir=tmp_path)
    try:
        lines = train(tmp_path, WandbSink())
        assert wandb.run is run  # still open after the Monitor closed the sink
        run.log({"loss": 1.0})
    finally:
        run.finish()
    rows = wandb_files.history(wandb_files.run_file(tmp_path))
    assert [row["hookscope/step"] for row in rows[:STEPS]] == [line["step"] for line in lines]
    assert rows[-1]["loss"] == 1.0


@pytest.mark.slow
def test_mlflow_file_store_has_the_jsonl_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mlflow = pytest.importorskip("mlflow", reason="mlflow comes with the dev extra")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks for an opt-in
    uri = (tmp_path / "mlruns").as_uri()
    sink = MlflowSink(experiment="hookscope-test", run_name="tiny", tracking_uri=uri, stats="all")
    lines = train(tmp_path, sink)
    client = mlflow.MlflowClient(tracking_uri=uri)
    run = client.get_run(sink.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "tiny"
    logged: dict[int, dict[str, float]] = {}
    for key in run.data.metrics:
        for metric in client.get_metric_history(sink.run_id, key):
            logged.setdefault(metric.step, {})[key] = metric.value
    same(logged, expected(lines))
    tag = run.data.tags["hookscope.first_nonfinite"]
    assert tag == f"step {NAN_STEP}: mid (forward, output)"


@pytest.mark.slow
def test_mlflow_logs_into_the_active_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mlflow = pytest.importorskip("mlflow", reason="mlflow comes with the dev extra")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    with mlflow.start_run() as active:
        sink = MlflowSink()
        lines = train(tmp_path, sink)
        assert sink.run_id == active.info.run_id
        assert mlflow.get_run(active.info.run_id).info.status == "RUNNING"
    history = mlflow.MlflowClient().get_metric_history(
        active.info.run_id, "hookscope/param/fc2.weight/grad/norm"
    )
    want = expected(lines)
    same(
        {m.step: {"k": m.value} for m in history},
        {
            step: {"k": values["hookscope/param/fc2.weight/grad/norm"]}
            for step, values in want.items()
        },
    )


@pytest.mark.parametrize(("sink", "extra"), [(WandbSink, "wandb"), (MlflowSink, "mlflow")])
def test_missing_tracker_says_which_extra(
    sink: Any, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, extra, None)  # "not installed" for importlib
    with pytest.raises(MissingExtraError, match=rf"pip install 'hookscope\[{extra}\]'"):
        sink()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"stats": {"fwd": ["std"]}}, r"unknown phase\(s\) \['fwd'\]"),
        ({"stats": ["std", "median"]}, r"unknown stat\(s\) \['median'\]"),
        ({"stats": {"backward": ["zero_frac"]}}, r"stats\['backward'\] must be a list of norm"),
        ({"stats": "std"}, r"got 'std'"),
        ({"modules": ""}, r"glob pattern\(s\).*got ''"),
        ({"prefix": 3}, r"prefix must be a string, got 3"),
    ],
)
def test_bad_options_are_refused_with_the_value(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        MetricSelection(**options)


def test_only_rank_zero_opens_a_tracker_run(
    tmp_path: Path, offline_wandb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow", reason="mlflow comes with the dev extra")
    monkeypatch.setenv("RANK", "1")  # what torchrun sets on the second process
    monkeypatch.setenv("WORLD_SIZE", "2")
    uri = (tmp_path / "mlruns").as_uri()
    sinks = [WandbSink(project="hookscope-test", dir=tmp_path / "w"), MlflowSink(tracking_uri=uri)]
    assert sinks[0].run is None and sinks[1].run_id is None
    model = Net()
    with Monitor(model, sinks=sinks) as mon:
        model(torch.randn(4, 6)).sum().backward()
        assert mon.step() is not None
    assert not (tmp_path / "w" / "wandb").exists() and not (tmp_path / "mlruns").exists()
