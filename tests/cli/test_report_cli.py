"""``hookscope report RUN_DIR``: writes the HTML file, names absent parts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hookscope.cli.main import main
from hookscope.viz import SECTIONS
from tests.viz.runs import train_records, write_run


def test_report_written_and_absent_parts_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "run", train_records(2))
    (run / "doctor.json").write_text(json.dumps({"bypasses": [], "hooks": []}))
    out = tmp_path / "out" / "report.html"
    code = main(["report", str(run), "-o", str(out), "--title", "my run"])
    stdout = capsys.readouterr().out
    assert code == 0
    text = out.read_text()
    assert "<title>my run</title>" in text
    assert all(f'id="{s}"' in text for s in SECTIONS)
    assert "No hook bypasses found." in text
    assert f"wrote {out}" in stdout
    assert "absent from" in stdout
    assert "summary.json, featuremaps, tensorboard" in stdout


def test_default_output_is_inside_the_run(tmp_path: Path) -> None:
    run = write_run(tmp_path, train_records(1))
    assert main(["report", str(run)]) == 0
    assert (run / "report.html").is_file()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "run directory not found"),
        (lambda p: p, "holds none of monitor, summary.json"),
    ],
)
def test_bad_run_dir_is_exit_2(
    make: object, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    assert main(["report", str(target)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
