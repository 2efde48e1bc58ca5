"""Regressions of issue #14, "CLI and run": real files, real models, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hookscope
from hookscope.cli.main import main

LONG_HOOK_FILE = "a_model_file_with_a_rather_long_name_so_that_the_source_column_is_wide.py"

HOOKED = textwrap.dedent(
    """
    from torch import nn

    def build():
        net = nn.Sequential(nn.Linear(4, 4))
        net[0].register_forward_hook(lambda module, args, output: None)
        return net
    """
)

TOKENS = textwrap.dedent(
    """
    import torch
    from torch import nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 8)
            self.proj = nn.Linear(8, 8)

        def forward(self, input_ids, attention_mask=None):
            h = self.embed(input_ids)
            if attention_mask is not None:
                h = h * attention_mask.unsqueeze(-1)
            return self.proj(h)

    def build():
        lm = LM()
        lm.proj.register_forward_hook(lambda module, args, output: None)
        return lm
    """
)

BYPASSED_CONV = textwrap.dedent(
    """
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3)
            self.conv2 = nn.Conv2d(4, 4, 3)

        def forward(self, x):
            return self.conv2.forward(self.conv1(x))

    def build():
        return Net()
    """
)


def test_run_keeps_argv0_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "show.py").write_text("import sys\nprint('argv0=' + sys.argv[0])\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--doctor", "sub/show.py", "x"]) == 0
    plain = subprocess.run(
        [sys.executable, "sub/show.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert "argv0=sub/show.py" in capsys.readouterr().out
    assert plain.stdout.strip() == "argv0=sub/show.py"


def test_doctor_json_records_130_for_a_keyboard_interrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "interrupted.py"
    script.write_text("raise KeyboardInterrupt\n")
    out = tmp_path / "doctor.json"
    assert main(["run", "--doctor", "--out", str(out), str(script)]) == 130
    assert json.loads(out.read_text())["exit_code"] == 130
    assert "interrupted" in capsys.readouterr().err


def test_hooks_keeps_file_and_line_whole_when_piped(tmp_path: Path) -> None:
    (tmp_path / LONG_HOOK_FILE).write_text(HOOKED)
    done = subprocess.run(
        [sys.executable, "-m", "hookscope", "hooks", f"{LONG_HOOK_FILE}:build"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    assert done.returncode == 0, done.stderr
    assert f"{tmp_path / LONG_HOOK_FILE}:6" in done.stdout
    assert "…" not in done.stdout


def test_hook_names_show_the_users_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "my_net.py").write_text(HOOKED)
    assert main(["hooks", f"{tmp_path / 'my_net.py'}:build", "--format", "json"]) == 0
    hooks = json.loads(capsys.readouterr().out)
    assert [h["hook"] for h in hooks] == ["my_net.build.<locals>.<lambda>"]


def test_doctor_takes_token_and_keyword_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "lm.py").write_text(TOKENS)
    spec = f"{tmp_path / 'lm.py'}:build"
    argv = ["doctor", spec, "--input-ids", "2,5", "--input", "attention_mask=2,5", "--format"]
    assert main([*argv, "json", "--device", "cpu"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["hooks"][0]["fired"] == 1


def test_featuremaps_says_which_layer_was_called_directly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "net.py").write_text(BYPASSED_CONV)
    out = tmp_path / "maps"
    argv = ["featuremaps", f"{tmp_path / 'net.py'}:build", "--input-size", "1,3,16,16"]
    assert main([*argv, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "not drawn: conv2 (Conv2d)" in err and "called directly" in err
    assert "fix: return self.conv2(self.conv1(x))" in err
    assert sorted(p.name for p in out.iterdir()) == ["conv1.png"]


def test_demo_without_extras_runs_what_it_can(tmp_path: Path) -> None:
    # matplotlib and tensorboard made unimportable in a real process.
    code = (
        "import sys\n"
        "for name in ('matplotlib', 'tensorboard', 'PIL'):\n"
        "    sys.modules[name] = None\n"
        "from hookscope.cli.main import main\n"
        "sys.exit(main(['demo', '--steps', '2', '--batch', '4', '--out', 'demo']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "pip install 'hookscope[tensorboard]'" in out
    assert "pip install 'hookscope[plots]'" in out
    assert "not available yet" not in out
    assert sorted(set(hookscope.read_run(tmp_path / "demo").step)) == [0, 1]
    assert f"per-step statistics: {Path('demo') / 'monitor'}" in out
    assert "  feature-map PNGs:" not in out and "  TensorBoard logs:" not in out
    assert (tmp_path / "demo" / "report.html").stat().st_size > 0
