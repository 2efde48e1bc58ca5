"""``hookscope demo``: the whole tour on SmallCNN, writing a run directory and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import hookscope
from hookscope.cli.demo import synthetic_batch
from hookscope.cli.main import main
from hookscope.viz import SECTIONS


def test_demo_writes_everything_and_finds_the_bypass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    args = ["demo", "--steps", "2", "--batch", "4", "--out", str(out)]
    (out / "tensorboard").mkdir(parents=True)
    (out / "monitor.jsonl").write_text('{"step": 7, "records": []}\n')  # from an older run
    assert main(args) == 0
    stdout = capsys.readouterr().out
    assert "skipped (not available yet)" not in stdout
    assert "found the planted bypass: head" in stdout
    assert f"tensorboard --logdir {out / 'tensorboard'}" in stdout
    assert f"file://{(out / 'report.html').resolve()}" in stdout
    assert not (out / "monitor.jsonl").exists()
    assert sorted(set(hookscope.read_run(out).step)) == [0, 1]
    doctor = json.loads((out / "doctor.json").read_text())
    assert [b["module"] for b in doctor["bypasses"]] == ["head"]
    assert json.loads((out / "summary.json").read_text())
    assert sorted(p.name for p in (out / "featuremaps").iterdir()) == [
        "features.0.png",
        "features.4.png",
    ]
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "tensorboard").iterdir())
    report = (out / "report.html").read_text()
    assert all(f'id="{s}"' in report for s in SECTIONS)
    assert "1 module(s) ran without their hooks" in report


def test_synthetic_labels_are_stripe_orientations() -> None:
    x, y = synthetic_batch(64, torch.Generator().manual_seed(0))
    assert x.shape == (64, 3, 32, 32)
    assert set(y.tolist()) <= set(range(10))
    # Class 0 has stripes at 0 degrees: the pattern varies along x only, so
    # neighbouring rows agree far better than neighbouring columns.
    zero = x[y == 0].mean(dim=1)
    rows = (zero[:, 1:, :] - zero[:, :-1, :]).abs().mean()
    cols = (zero[:, :, 1:] - zero[:, :, :-1]).abs().mean()
    assert cols > 2 * rows


def test_bad_steps_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--steps", "0"]) == 2
    assert "--steps and --batch must be at least 1" in capsys.readouterr().err
