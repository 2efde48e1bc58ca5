"""Regressions of issue #14, "HTML report and pictures": real run folders, real figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope
from hookscope.cli.main import main
from hookscope.viz import gradient_flow_plot, write_report
from hookscope.viz.featuremaps import MAX_STEM, feature_map_grid, grid_title, write_feature_maps
from hookscope.viz.rundir import load_run
from hookscope.zoo import SmallCNN

pytest.importorskip("matplotlib")

MATH = "$\\foo$"


def _line(step: int, module: str = "fc", value: float = 1.0) -> str:
    record = {"phase": "forward", "module": module, "tensor": "output", "stat": "mean"}
    return json.dumps({"step": step, "records": [{**record, "value": value}], "alerts": []})


BAD_LINES = {
    "alerts is a number": '{"step": 1, "records": [], "alerts": 5}',
    "alerts is a string": '{"step": 1, "records": [], "alerts": "many"}',
    "first_nonfinite is a list": '{"step": 1, "records": [], "first_nonfinite": [1]}',
    "step overflows": '{"step": 1e400, "records": []}',
    "deep array": '{"step": 1, "records": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "a record is a string": '{"step": 1, "records": ["x"]}',
    "a record lacks its stat": '{"step": 1, "records": [{"phase": "forward", "module": "m"}]}',
}


def test_a_bad_line_drops_that_line_only(tmp_path: Path) -> None:
    lines = [_line(0).encode()]
    lines += [text.encode() for text in BAD_LINES.values()]
    lines += [b'{"step": 2, "records": [], "note": "\xff"}', _line(3).encode()]
    (tmp_path / "monitor.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    run = load_run(tmp_path)
    assert run.steps == 2
    assert sorted({row["step"] for row in run.rows}) == [0, 3]
    skipped = sorted(note for note in run.notes if "skipped" in note)
    # One note per kind of fault, with its count and first line.
    assert skipped == [
        "monitor.jsonl: 1 line skipped (nested too deep; first at line 6: RecursionError: "
        + skipped[0].split("RecursionError: ", 1)[1],
        "monitor.jsonl: 1 line skipped (not UTF-8; first at line 9: UnicodeDecodeError: "
        + skipped[1].split("UnicodeDecodeError: ", 1)[1],
        "monitor.jsonl: 6 lines skipped (not a monitor step; first at line 2: TypeError: "
        + skipped[2].split("TypeError: ", 1)[1],
    ]
    assert write_report(tmp_path).path.stat().st_size > 0


def test_garbage_gives_one_note_per_kind_and_a_huge_line_is_skipped_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hookscope.store import jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE", 1 << 20)
    garbage = b"".join(b"garbage line %d {\n" % n for n in range(20_000))
    huge = b'{"step": 5, "records": [' + b"1," * (3 << 20) + b"1]}\n"
    data = _line(0).encode() + b"\n" + garbage + huge + _line(1).encode() + b"\n"
    (tmp_path / "monitor.jsonl").write_bytes(data)
    run = load_run(tmp_path)
    assert run.steps == 2
    notes = [note for note in run.notes if "skipped" in note]
    assert len(notes) == 2
    assert "20000 lines skipped (not JSON" in notes[0]
    assert "1 line skipped (line too long" in notes[1]


def test_a_bom_is_read_and_a_directory_is_named_unreadable(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "monitor.jsonl").write_bytes(b"\xef\xbb\xbf" + _line(0).encode() + b"\n")
    assert load_run(tmp_path / "a").steps == 1
    (tmp_path / "b" / "monitor.jsonl").mkdir(parents=True)
    run = load_run(tmp_path / "b")
    assert run.steps == 0
    assert any("monitor.jsonl is unreadable" in note for note in run.notes), run.notes


def test_mathtext_names_are_drawn_as_plain_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_line(step, MATH, float(step)) for step in range(3)]
    grads = {"phase": "param", "module": f"{MATH}.weight", "tensor": "grad", "stat": "norm"}
    lines.append(json.dumps({"step": 3, "records": [{**grads, "value": 0.5}]}))
    (tmp_path / "monitor.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["report", str(tmp_path)]) == 0
    assert "left out" not in capsys.readouterr().out


def test_featuremaps_of_a_mathtext_module(tmp_path: Path) -> None:
    model = nn.Sequential()
    model.add_module(MATH, nn.Conv2d(3, 4, 3))
    with torch.no_grad(), hookscope.capture(model, nn.Conv2d, keep=True) as cache:
        model(torch.rand(1, 3, 8, 8))
    written, _ = write_feature_maps(cache, tmp_path)
    assert len(written) == 1 and written[0].stat().st_size > 0


def test_featuremap_file_names_are_unique_and_bounded(tmp_path: Path) -> None:
    maps = torch.rand(1, 2, 4, 4)
    keys = ["a/b", "a_b", "x" * 300, "features.0", ""]
    written, _ = write_feature_maps({key: maps for key in keys}, tmp_path, top_k=1)
    names = [path.name for path in written]
    assert len(set(names)) == len(keys) == len(list(tmp_path.iterdir()))
    assert names[1] == "a_b.png" and names[3] == "features.0.png"
    assert all(len(path.stem) <= MAX_STEM for path in written)


def test_a_feature_map_grid_has_a_colour_scale() -> None:
    fig = feature_map_grid(torch.rand(1, 4, 6, 6), top_k=4, title="conv")
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1
    assert "own min..max" in bars[0].get_ylabel()


def test_a_module_called_several_times_says_so() -> None:
    conv = nn.Conv2d(3, 3, 1)
    model = nn.Sequential(conv, nn.ReLU(), conv)
    with torch.no_grad(), hookscope.capture(model, nn.Conv2d, keep=True) as cache:
        model(torch.rand(1, 3, 4, 4))
    assert cache.calls["0"] == 2
    assert grid_title("0", cache.calls["0"]) == "0 (last of 2 calls)"
    assert grid_title("features.0", 1) == "features.0"


def test_gradient_flow_names_its_order() -> None:
    rows = [
        {"step": 0, "phase": "param", "module": name, "tensor": "grad", "stat": "norm", "value": v}
        for name, v in (("head.weight", 1.0), ("features.0.weight", 2.0))
    ]
    label = gradient_flow_plot(rows).axes[0].get_xlabel()
    assert label.startswith("layer, in gradient-arrival order")
    forward = [
        {**rows[0], "phase": "forward", "module": m, "stat": "mean"} for m in ("features.0", "head")
    ]
    assert gradient_flow_plot(forward + rows).axes[0].get_xlabel() == "layer, in forward order"


def test_every_layer_gets_an_activation_plot(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {
                "step": step,
                "records": [
                    {
                        "phase": "forward",
                        "module": f"layer{i}",
                        "tensor": "output",
                        "stat": "mean",
                        "value": 1.0,
                    }
                    for i in range(20)
                ],
            }
        )
        for step in range(2)
    ]
    (tmp_path / "monitor.jsonl").write_text("\n".join(lines) + "\n")
    page = write_report(tmp_path).path.read_text()
    assert 'alt="activation statistics, layers 1-12 of 20"' in page
    assert 'alt="activation statistics, layers 13-20 of 20"' in page


def test_summary_and_doctor_sections_are_the_terminal_tables(tmp_path: Path) -> None:
    model = SmallCNN(plant_bypass=True)
    summary = hookscope.summary(model, input_size=(1, 3, 32, 32))
    report = hookscope.doctor(model, torch.randn(2, 3, 32, 32))
    (tmp_path / "summary.json").write_text(summary.to_json())
    (tmp_path / "doctor.json").write_text(json.dumps(report.to_dict()))
    page = write_report(tmp_path).path.read_text()
    summary_html = page[page.index('id="summary"') : page.index('id="alerts"')]
    doctor_html = page[page.index('id="doctor"') :]
    assert "<th>Own params</th>" in summary_html and "Total params: " in summary_html
    assert "fallback_reason" not in summary_html and "[&quot;" not in summary_html
    assert "Modules run through a direct .forward() call" in summary_html
    assert "Direct .forward() calls by call site (1)" in doctor_html
    assert "[&quot;head&quot;]" not in doctor_html
