"""The run-directory reader and the self-contained HTML report, checked in real Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import hookscope
from hookscope.errors import UsageError
from hookscope.viz import SECTIONS, load_run, save_feature_maps, write_report
from hookscope.zoo import SmallCNN
from tests.viz.chromium import find_chromium, load_page
from tests.viz.images import assert_not_blank, load_rgb
from tests.viz.runs import train_records, write_run

DOCTOR = {
    "bypasses": [{"module": "head", "type": "Linear", "call_site": "zoo.py:38", "count": 1}],
    "hooks": [],
}
SUMMARY = {"total_params": 10_000, "rows": [{"name": "features.0", "params": 448}]}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_run(tmp_path_factory.mktemp("run"), train_records(4, poison_step=2))
    (run / "summary.json").write_text(json.dumps(SUMMARY))
    (run / "doctor.json").write_text(json.dumps(DOCTOR))
    (run / "tensorboard").mkdir()
    model = SmallCNN().eval()
    with torch.no_grad(), hookscope.capture(model, "features.0") as cache:
        model(torch.randn(1, 3, 32, 32))
        save_feature_maps(cache["features.0"], run / "featuremaps" / "features.0.png", top_k=4)
    return run


def test_load_run_reads_every_part(full_run: Path) -> None:
    run = load_run(full_run)
    assert run.steps == 4
    assert run.missing == ()
    assert run.first_nonfinite == {
        "step": 2,
        "phase": "forward",
        "module": "features.0",
        "tensor": "output",
    }
    # The NaN in step 2's input reaches all 10 leaf outputs in steps 2 and 3 (BatchNorm
    # spreads it over the batch, SGD then puts NaN into every weight).
    assert len(run.alerts) == 20
    assert {r["phase"] for r in run.rows} == {"forward", "param"}
    assert [p.name for p in run.featuremaps] == ["features.0.png"]


def test_truncated_last_line_is_skipped_with_a_note(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, train_records(2))
    with (run_dir / "monitor.jsonl").open("a") as f:
        f.write('{"step": 2, "records": [{"phase"')  # a run killed mid-write
    run = load_run(run_dir)
    assert run.steps == 2
    assert len(run.notes) == 1
    assert "1 line skipped (not JSON; first at line 3" in run.notes[0]


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="holds none of"):
        load_run(tmp_path)
    with pytest.raises(UsageError, match="not found"):
        load_run(tmp_path / "missing")


def test_report_is_self_contained_with_every_section(full_run: Path, tmp_path: Path) -> None:
    result = write_report(full_run, tmp_path / "r.html")
    text = result.path.read_text()
    for ident in SECTIONS:
        assert f'<section id="{ident}">' in text
    urls = re.findall(r"""(?:src|href)=["']([^"']+)""", text)
    assert urls, "expected inline images and anchors"
    assert all(u.startswith(("data:", "#")) for u in urls), [u[:40] for u in urls]
    assert "http://" not in text and "https://" not in text
    assert text.count("data:image/png;base64,") == 3  # gradient flow, activations, feature maps
    assert "First NaN/Inf at step 2 in features.0" in text
    assert "1 module(s) ran without their hooks" in text
    assert "tensorboard --logdir" in text


def test_absent_parts_are_named(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "run", train_records(2))
    result = write_report(run_dir)
    assert result.path == run_dir / "report.html"
    assert result.missing == ("summary.json", "doctor.json", "featuremaps", "tensorboard")
    text = result.path.read_text()
    assert "no summary.json" in text
    assert "no doctor results (doctor.json absent)" in text
    assert "No NaN or Inf seen in 2 step(s)" in text


def test_report_without_monitor_data_still_builds(tmp_path: Path) -> None:
    (tmp_path / "doctor.json").write_text(json.dumps(DOCTOR))
    result = write_report(tmp_path)
    text = result.path.read_text()
    assert "monitor" in result.missing
    assert "no monitor data" in text
    assert "data:image/png" not in text


needs_chromium = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium not installed (`make browser` installs it with apt-get); browser test skipped",
)


@needs_chromium
def test_harness_catches_console_errors(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><script>console.error('broken')</script></body></html>"
    )
    result = load_page(page, evaluate={})
    assert result.errors == ["console: broken"]


@needs_chromium
def test_report_in_headless_chromium(full_run: Path, tmp_path: Path) -> None:
    report = write_report(full_run, tmp_path / "report.html").path
    result = load_page(
        report,
        evaluate={
            "sections": "[...document.querySelectorAll('section')].map(s => s.id)",
            "images": "[...document.images].map(i => i.complete && i.naturalWidth > 0)",
            "height": "document.documentElement.scrollHeight",
        },
        width=1280,
        height=900,
    )
    assert result.errors == []
    assert all(url.startswith(("file:", "data:")) for url in result.requests), result.requests
    assert result.values["sections"] == list(SECTIONS)
    assert result.values["images"] == [True, True, True]
    assert result.values["height"] > 900  # the page has content below the fold
    (tmp_path / "shot.png").write_bytes(result.screenshot)
    pixels = load_rgb(tmp_path / "shot.png")
    assert pixels.shape == (900, 1280, 3)
    assert_not_blank(pixels, min_colours=20)


def test_report_from_a_real_monitor_run(tmp_path: Path) -> None:
    from hookscope.sinks import JsonlSink

    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with hookscope.Monitor(model, sinks=[JsonlSink(tmp_path / "monitor.jsonl")]) as mon:
        for _ in range(2):
            loss = model(torch.randn(4, 3, 32, 32)).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            mon.step()
    run = load_run(tmp_path)
    assert run.steps == 2
    assert run.notes == ()
    frame = mon.to_pandas()
    assert len(run.rows) == len(frame)
    result = write_report(tmp_path)
    text = result.path.read_text()
    assert text.count("data:image/png;base64,") == 2  # gradient flow, activation statistics
    assert "left out" not in text
