"""``hookscope summary``: formats, inputs, errors as exit code 2 without traceback."""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest

from hookscope.cli.main import main

MODEL_FILE = textwrap.dedent(
    """
    import torch
    from torch import nn

    class Tokens(nn.Module):
        def __init__(self, vocab=20, dim=8):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.fc = nn.Linear(dim, dim)

        def forward(self, input_ids, attention_mask=None, extra=None):
            out = self.fc(self.embed(input_ids))
            if attention_mask is not None:
                out = out * attention_mask[..., None]
            if extra is not None:
                out = out + extra["bias"]
            return out

    def build(dim=8):
        return Tokens(dim=dim)

    def broken():
        return nn.Sequential(nn.Linear(4, 4), nn.Linear(5, 2))
    """
)


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(MODEL_FILE, encoding="utf-8")
    return path


def test_table_for_builtin_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["summary", "hookscope.zoo:small_cnn", "--input-size", "1,3,32,32"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Total params: 10,314" in out
    assert "MACs: 1.63 M (1,627,136)" in out  # conv 442,368 + conv 1,179,648 + fc 5,120
    assert "Run on: meta" in out


def test_json_with_kwargs_depth_and_device(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["summary", "hookscope.zoo:small_cnn", "--kwargs", '{"num_classes": 4}']
    argv += ["--input-size", "2,3,32,32", "--depth", "1", "--device", "cpu", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device"] == "cpu"
    assert data["output_shapes"] == [[2, 4]]
    assert [r["name"] for r in data["rows"]] == ["", "features", "flatten", "head"]


def test_csv_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["summary", "hookscope.zoo:small_cnn", "--input-size", "1,3,32,32"]
    assert main([*base, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[-1]["name"] == "head" and rows[-1]["macs"] == str(512 * 10)
    assert main([*base, "--format", "markdown"]) == 0
    assert "| `(root)` | SmallCNN |" in capsys.readouterr().out


def test_token_keyword_and_dict_inputs(
    model_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["summary", f"{model_file}:build", "--kwargs", '{"dim": 6}', "--input-ids", "2,5"]
    argv += ["--input", "attention_mask=2,5", "--input", "extra.bias=6", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["macs"] == 2 * 5 * 6 * 6
    assert data["input_shapes"] == [[2, 5], [2, 5], [6]]


def test_several_inputs_with_dtypes(model_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["summary", f"{model_file}:build", "--input-size", "3,4", "--input-size", "3,4"]
    argv += ["--dtype", "int64", "--dtype", "float32", "--format", "json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["macs"] == 3 * 4 * 8 * 8


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "summary.json"
    argv = ["summary", "hookscope.zoo:small_cnn", "--input-size", "1,3,32,32", "--format", "json"]
    assert main([*argv, "-o", str(target)]) == 0
    assert json.loads(target.read_text())["total_params"] == 10314
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--input-size", "1,a,3"], "bad shape '1,a,3'"),
        (["--input-size", "1,4", "--dtype", "float7"], "unknown dtype 'float7'"),
        (["--input", "nonsense"], "NAME=SHAPE"),
        (["--input-size", "1,4", "--depth", "-2"], "-2"),
        (["--input-size", "1,4", "--device", "warp"], "'warp'"),
        ([], "--input-size"),
    ],
)
def test_usage_errors_exit_2(
    model_file: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summary", f"{model_file}:broken", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_forward_error_exit_2_names_modules(
    model_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["summary", f"{model_file}:broken", "--input-size", "1,4"]) == 2
    err = capsys.readouterr().err
    assert "in 1 (Linear)" in err and "modules that had run: 0" in err
    assert "Traceback" not in err


def test_bad_model_spec_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", "no_such_module_xyz:f", "--input-size", "1,4"]) == 2
    assert "no_such_module_xyz" in capsys.readouterr().err
