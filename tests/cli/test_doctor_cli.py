"""``hookscope doctor``: table and JSON output, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hookscope.cli.main import main

HOOKED = textwrap.dedent(
    """
    from torch import nn

    def count(module, args, output):
        pass

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(4, 4)
            self.unused = nn.Linear(4, 4)

        def forward(self, x):
            return self.used(x)

    def build():
        net = Net()
        net.used.register_forward_hook(count)
        net.unused.register_forward_hook(count)
        return net

    def build_clean():
        net = Net()
        net.used.register_full_backward_hook(lambda m, gi, go: None)
        return net
    """
)


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "hooked.py"
    path.write_text(HOOKED)
    return path


def test_planted_bypass_prints_a_table_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["doctor", "hookscope.zoo:small_cnn", "--kwargs", '{"plant_bypass": true}']
    code = main([*argv, "--input-size", "2,3,32,32"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Direct .forward() calls (by call site)" in out
    assert "src/hookscope/zoo.py:39  head    Linear  1" in out
    assert "fix: return self.head(x)" in out


def test_unfired_hook_exits_1_and_json_names_the_reason(
    model_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "report.json"
    argv = ["doctor", f"{model_file}:build", "--input-size", "2,4", "--format", "json"]
    code = main([*argv, "--out", str(out_file)])
    printed = json.loads(capsys.readouterr().out)
    assert code == 1
    assert printed == json.loads(out_file.read_text())
    reasons = {(h["module"], h["fired"], h["code"]) for h in printed["hooks"]}
    assert reasons == {("used", 1, None), ("unused", 0, "not_executed")}


def test_backward_flag_makes_backward_hooks_fire_and_exits_0(
    model_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"{model_file}:build_clean"
    assert main(["doctor", spec, "--input-size", "2,4"]) == 1  # no backward: hook cannot fire
    assert "NOT FIRED: no backward pass" in capsys.readouterr().out
    assert main(["doctor", spec, "--input-size", "2,4", "--backward", "--eval"]) == 0
    assert "OK: all 1 hook(s) fired" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["hookscope.zoo:small_cnn"], "needs at least one --input-size"),
        (["hookscope.zoo:small_cnn", "--input-size", "2,3,a"], "bad shape '2,3,a'"),
        (["hookscope.zoo:small_cnn", "--input-size", "2,3", "--dtype", "f7"], "'f7'"),
        (["hookscope.zoo:nothing", "--input-size", "2,3,32,32"], "no attribute 'nothing'"),
        (["hookscope.zoo:small_cnn", "--input-size", "2,5,32,32"], "the model raised"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
