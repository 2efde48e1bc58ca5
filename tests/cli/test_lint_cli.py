"""``hookscope lint``: exit codes, formats, --fix, --diff, options."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hookscope.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lint"
CLEAN = "import torch\n\ndef f(model: torch.nn.Module, x):\n    return model(x)\n"
DIRTY = (
    "import torch\n\ndef f(model: torch.nn.Module, x):\n    return model.forward(x)  # keep me\n"
)


@pytest.fixture
def dirty(tmp_path: Path) -> Path:
    path = tmp_path / "dirty.py"
    path.write_text(DIRTY, encoding="utf-8")
    return path


def test_clean_file_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "clean.py"
    path.write_text(CLEAN, encoding="utf-8")
    assert main(["lint", "--no-config", str(path)]) == 0
    assert "no findings" in capsys.readouterr().err


def test_findings_exit_1_with_text_lines(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--no-config", str(dirty)]) == 1
    out = capsys.readouterr()
    assert out.out.startswith(f"{dirty}:4:12: HS101 [*] `model.forward(...)` skips every hook")
    assert "1 finding(s), 1 fixable with --fix" in out.err


def test_json_format(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--no-config", "--format", "json", str(dirty)]) == 1
    (item,) = json.loads(capsys.readouterr().out)
    assert (item["path"], item["line"], item["col"], item["end_line"], item["end_col"]) == (
        str(dirty),
        4,
        12,
        4,
        28,
    )
    assert (item["code"], item["severity"], item["fixable"]) == ("HS101", "error", True)


def test_sarif_and_github_formats(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--no-config", "--format", "sarif", str(dirty)]) == 1
    log = json.loads(capsys.readouterr().out)
    assert log["runs"][0]["results"][0]["ruleId"] == "HS101"
    assert main(["lint", "--no-config", "--format", "github", str(dirty)]) == 1
    assert capsys.readouterr().out.startswith(f"::error file={dirty},line=4,col=12,")


def test_diff_prints_and_writes_nothing(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--no-config", "--diff", str(dirty)]) == 1
    out = capsys.readouterr().out
    assert "-    return model.forward(x)  # keep me" in out
    assert "+    return model(x)  # keep me" in out
    assert dirty.read_text(encoding="utf-8") == DIRTY


def test_fix_writes_and_then_exits_clean(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--no-config", "--fix", str(dirty)]) == 0
    assert dirty.read_text(encoding="utf-8") == DIRTY.replace("model.forward(x)", "model(x)")
    assert "fixed 1 finding(s)" in capsys.readouterr().err


def test_fix_leaves_unfixable_findings_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hooks.py"
    shutil.copy(FIXTURES / "hooks_cases.py", path)
    assert main(["lint", "--no-config", "--fix", "--format", "json", str(path)]) == 1
    codes = {item["code"] for item in json.loads(capsys.readouterr().out)}
    assert codes == {"HS111", "HS112", "HS114"}


def test_select_ignore_exclude_and_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(FIXTURES / "hooks_cases.py", tmp_path / "hooks.py")
    (tmp_path / "gen").mkdir()
    shutil.copy(FIXTURES / "forward_cases.py", tmp_path / "gen" / "fwd.py")
    args = ["lint", "--no-config", "--format", "json", "--jobs", "2", str(tmp_path)]
    assert main([*args, "--select", "HS11", "--ignore", "HS112,HS114", "--exclude", "gen"]) == 1
    assert {i["code"] for i in json.loads(capsys.readouterr().out)} == {"HS111", "HS113"}
    assert main([*args, "--select", "HS103"]) == 1
    assert {Path(i["path"]).name for i in json.loads(capsys.readouterr().out)} == {"fwd.py"}


def test_usage_errors_exit_2(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--select", "HS9", str(dirty)]) == 2
    assert "'HS9'" in capsys.readouterr().err
    assert main(["lint", str(dirty.parent / "missing.py")]) == 2
    assert "missing.py" in capsys.readouterr().err
    assert main(["lint", "--fix", "--diff", str(dirty)]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--jobs", "-3", str(dirty)])
    assert exc.value.code == 2
    assert "'-3'" in capsys.readouterr().err


def test_pyproject_config_is_read(dirty: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (dirty.parent / "pyproject.toml").write_text(
        '[tool.hookscope.lint]\nignore = ["HS101"]\n', encoding="utf-8"
    )
    assert main(["lint", str(dirty)]) == 0
    assert main(["lint", "--no-config", str(dirty)]) == 1
    capsys.readouterr()


def test_progress_bar_on_a_terminal(
    dirty: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["lint", "--no-config", str(dirty)]) == 1
    assert "HS101" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_program_flushes_everything_before_its_quick_exit(tmp_path: Path, fmt: str) -> None:
    # `python -m hookscope lint` ends with os._exit: all output must be out by then,
    # also when it is far bigger than a pipe's buffer (and stdout is block-buffered).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for i in range(40):
        (tmp_path / f"m{i:02d}.py").write_text(DIRTY * 40, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "hookscope", "lint", "--no-config", "--format", fmt, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stdout) > 1 << 17  # more than two pipe buffers
    assert proc.stdout.endswith("]\n" if fmt == "json" else "\n")  # down to the last byte
    if fmt == "json":
        assert len(json.loads(proc.stdout)) == 1600
    else:
        assert len(proc.stdout.splitlines()) == 1600
        assert proc.stderr.strip().endswith("1600 finding(s), 1600 fixable with --fix")
