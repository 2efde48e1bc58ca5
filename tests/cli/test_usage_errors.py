"""Usage errors that say what went wrong and what to type instead (exit code 2, one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookscope.cli.main import main


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line, no traceback
    return err


@pytest.mark.parametrize(
    ("argv", "command", "closest"),
    [
        (["run", "--moniter", "train.py"], "run", "--monitor"),
        (["run", "--doctr=1", "train.py"], "run", "--doctor"),
        (["lint", "--fixx", "."], "lint", "--fix"),
        (["doctor", "--backwrd", "pkg.mod:build"], "doctor", "--backward"),
        (["summary", "--dpeth", "2", "pkg.mod:build"], "summary", "--depth"),
        (["report", "--outptu", "x", "run"], "report", "--output"),
    ],
)
def test_unknown_options_name_the_closest_one_and_the_subcommand_help(
    capsys: pytest.CaptureFixture[str], argv: list[str], command: str, closest: str
) -> None:
    err = _error(capsys, argv)
    assert err.startswith(f"hookscope {command}: error: unrecognized arguments: {argv[1]}")
    assert f"did you mean {closest}?" in err
    assert f"(see hookscope {command} --help)" in err


def test_every_subcommand_points_at_its_own_help(capsys: pytest.CaptureFixture[str]) -> None:
    from hookscope.cli.main import _COMMANDS

    positionals = {"run": ["train.py"], "lint": ["."], "demo": [], "record": ["-o", "x", "m:f"]}
    for command in _COMMANDS:
        argv = [command, "--zzzz-not-an-option", *positionals.get(command, ["m:f"])]
        err = _error(capsys, argv)
        assert f"hookscope {command}: error: unrecognized arguments: --zzzz-not-an-option" in err
        assert f"(see hookscope {command} --help)" in err


def test_an_unknown_command_names_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, ["rnu", "--monitor"])
    assert "invalid choice: 'rnu'" in err and "did you mean 'run'?" in err


def test_run_options_after_the_script_are_explained(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text("print('ran')\n")
    assert main(["run", "--monitor", "train.py", "--out", "run/"]) == 2
    err = capsys.readouterr().err
    assert "--monitor needs --out DIR" in err
    assert "--out came after train.py and went to the script" in err
    assert "hookscope run --monitor --out run/ train.py" in err
    assert not Path("run").exists()
    assert main(["run", "train.py", "--doctor", "--epochs", "2"]) == 2
    err = capsys.readouterr().err
    assert "needs --doctor and/or --monitor; --doctor came after train.py" in err
    assert "hookscope run --doctor train.py --epochs 2" in err
