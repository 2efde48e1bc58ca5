"""hookscope compare / record on the command line: exit codes, formats, files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hookscope.cli.main import main

MODELS = str(Path(__file__).resolve().parent / "models.py")
CNN = f"{MODELS}:resnet_tiny"
IMAGE = ["--input-size", "2,3,32,32"]


def test_same_model_exits_0_and_bf16_exits_1_culprit_first(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", CNN, *IMAGE]) == 0
    assert "culprit: none" in capsys.readouterr().out
    assert main(["compare", CNN, *IMAGE, "--dtype-b", "bf16", "--isolate"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].startswith("culprit: conv1 (Conv2d) introduces")
    assert lines[7].split()[:2] == ["0", "conv1"]  # the culprit is the first table row


def test_json_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", CNN, *IMAGE, "--autocast-b", "bf16", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "propagate" and data["culprit"] == "conv1"
    assert data["rows"][0]["tensors"][0]["metrics"]["numel"] == 2 * 64 * 16 * 16
    assert data["rows"][0]["sqnr_db"] != "inf"
    assert main(["compare", CNN, *IMAGE, "--format", "markdown", "--rtol", "0.5"]) == 0
    assert "| # | Module |" in capsys.readouterr().out


def test_record_then_compare_against_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("safetensors")
    out = tmp_path / "cnn.safetensors"
    assert main(["record", CNN, *IMAGE, "-o", str(out)]) == 0
    assert out.stat().st_size > 0
    assert "module call(s)" in capsys.readouterr().err
    assert main(["compare", str(out), CNN, "--isolate"]) == 0
    assert "63 module call(s), 0 outside" in capsys.readouterr().out


def test_html_report_has_the_comparison_section(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    page = tmp_path / "report.html"
    assert main(["compare", CNN, *IMAGE, "--dtype-b", "bf16", "-o", str(page)]) == 1
    text = page.read_text()
    assert '<section id="comparison"><h2>Comparison</h2>' in text
    assert "data:image/png;base64," in text and "culprit: <code>conv1</code>" in text
    assert "<h3>propagate</h3>" in text and "<h3>isolate</h3>" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["compare", CNN], "give --input-size"),
        (["compare", CNN, *IMAGE, "--rtol", "-1"], "--rtol and --atol"),
        (["compare", "missing.safetensors", CNN], "recording not found"),
        (["compare", "nope:fn", *IMAGE], "cannot import"),
        (["compare", CNN, "--input-size", "2,5"], "raised RuntimeError"),
        (["compare", CNN, *IMAGE, "--dtype-b", "int8x"], "unknown dtype"),
        (["compare", CNN, *IMAGE, "--autocast-b", "bf16", "--compile-b"], "--autocast-b"),
        (["record", CNN, *IMAGE, "-o", "x.pt"], ".safetensors"),
        (["record", CNN, *IMAGE, "--max-bytes", "10", "-o", "runs/x.safetensors"], "max_bytes=10"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_saved_comparison_joins_the_run_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "monitor.jsonl").write_text("")
    saved = tmp_path / "comparison.json"
    assert (
        main(["compare", CNN, *IMAGE, "--dtype-b", "bf16", "--format", "json", "-o", str(saved)])
        == 1
    )
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 0
    text = (tmp_path / "r.html").read_text()
    assert '<section id="comparison"><h2>Comparison</h2>' in text
    assert "culprit: <code>conv1</code>" in text
