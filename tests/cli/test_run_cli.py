"""``hookscope run``: the script runs as __main__ with its argv and exit code; bypasses at exit."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from torch import nn

from hookscope.cli.main import main

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 4)
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            return self.head.forward(self.body(x))

    net = Net()
    net.head.register_forward_hook(lambda m, a, o: None)
    for _ in range(3):
        net(torch.ones(1, 4))
    print(json.dumps({"argv": sys.argv[1:], "name": __name__}))
    if "--raise" in sys.argv:
        raise ValueError("boom from the script")
    if "--exit" in sys.argv:
        sys.exit(int(sys.argv[-1]))
    """
)
# Line of `return self.head.forward(...)` in SCRIPT (textwrap keeps the leading newline).
FORWARD_LINE = SCRIPT.splitlines().index("        return self.head.forward(self.body(x))") + 1


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def _linear_forward_is_original() -> bool:
    return not hasattr(nn.Linear.__dict__["forward"], "__hookscope_forward__")


def test_doctor_reports_bypasses_by_call_site_and_writes_json(
    script: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code = main(["run", "--doctor", "--out", str(out), str(script), "a", "--b"])
    captured = capsys.readouterr()
    assert code == 0
    assert json.loads(captured.out) == {"argv": ["a", "--b"], "name": "__main__"}
    assert "1 call site(s), 3 direct .forward() call(s)" in captured.err
    assert "fix: return self.head(self.body(x))" in captured.err
    data = json.loads(out.read_text())
    [record] = data["bypasses"]
    assert record["call_site"] == f"{script}:{FORWARD_LINE}"
    assert (record["module"], record["module_type"], record["count"]) == ("head", "Linear", 3)
    assert record["hooks_skipped"] == ["forward:__main__.<lambda>"]
    assert data["exit_code"] == 0 and data["argv"] == [str(script), "a", "--b"]
    assert _linear_forward_is_original()
    assert "__init_subclass__" not in nn.Module.__dict__


def test_script_exit_code_and_exception_are_kept_and_report_still_printed(
    script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--doctor", str(script), "--exit", "3"]) == 3
    assert "3 direct .forward() call(s)" in capsys.readouterr().err
    assert main(["run", "--doctor", str(script), "--raise"]) == 1
    err = capsys.readouterr().err
    assert "ValueError: boom from the script" in err
    assert f'File "{script}"' in err and "runpy" not in err
    assert "3 direct .forward() call(s)" in err
    assert _linear_forward_is_original()


def test_module_mode_runs_a_module_as_main(
    script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(script.parent))
    assert main(["run", "--doctor", "-m", "train", "x"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"argv": ["x"], "name": "__main__"}
    assert "3 direct .forward() call(s)" in captured.err


def test_monitor_and_doctor_write_the_run_directory_even_when_the_script_raises(
    script: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hookscope.sinks.jsonl import read_jsonl

    out_dir = tmp_path / "run"
    assert (
        main(["run", "--monitor", "--every", "1", "--doctor", "--out", str(out_dir), str(script),
              "--raise"]) == 1
    )  # fmt: skip
    steps = read_jsonl(out_dir / "monitor.jsonl")
    assert [line["step"] for line in steps] == [0, 1, 2]
    assert {r["module"] for r in steps[0]["records"] if r["phase"] == "forward"} >= {"body"}
    assert json.loads((out_dir / "doctor.json").read_text())["exit_code"] == 1
    err = capsys.readouterr().err
    assert "1 model(s) monitored" in err
    assert f"hookscope report {out_dir}" in err


def test_monitor_records_every_tenth_step_by_default_and_checks_the_others(
    tmp_path: Path,
) -> None:
    from hookscope.sinks.jsonl import read_jsonl

    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import math
            import torch
            from torch import nn

            net = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 1))
            for step in range(25):
                x = torch.ones(2, 4)
                if step == 13:
                    x[0, 0] = math.nan
                net(x)
            """
        )
    )
    out_dir = tmp_path / "run"
    assert main(["run", "--monitor", "--out", str(out_dir), str(script)]) == 0
    steps = read_jsonl(out_dir / "monitor.jsonl")
    assert [line["step"] for line in steps] == [0, 10, 13, 20]
    assert steps[2]["first_nonfinite"]["step"] == 13


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["SCRIPT"], "needs --doctor and/or --monitor"),
        (["--doctor", "missing.py"], "script not found: 'missing.py'"),
        (["--monitor", "SCRIPT"], "--monitor needs --out DIR"),
        (["--doctor", "-m", "no_such_module_here"], "module not found: 'no_such_module_here'"),
        (["--doctor", "--every", "5", "SCRIPT"], "--every needs --monitor"),
        (
            ["--monitor", "--every", "0", "--out", "OUT", "SCRIPT"],
            "--every must be an int >= 1, got 0",
        ),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(script.parent / "run")
    argv = [str(script) if a == "SCRIPT" else out if a == "OUT" else a for a in argv]
    assert main(["run", *argv]) == 2
    assert message in capsys.readouterr().err
