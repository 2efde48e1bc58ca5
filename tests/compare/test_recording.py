"""Recordings: written, read back (also in a fresh process), budgets, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import hookscope
from hookscope.compare import load_recording
from hookscope.errors import CaptureOverflowError, UsageError
from tests.compare.models import gpt2_ids, gpt2_tiny, perturbed, resnet_tiny

pytest.importorskip("safetensors")

ROOT = Path(__file__).resolve().parents[2]


def test_recording_read_back_in_a_fresh_process_gives_zero_error(tmp_path: Path) -> None:
    path = tmp_path / "cnn.safetensors"
    rec = hookscope.record(resnet_tiny(), torch.randn(2, 3, 32, 32), path=path)
    assert path.is_file() and not list(tmp_path.glob(".*tmp"))
    code = (
        "import json, hookscope\n"
        "from tests.compare.models import resnet_tiny\n"
        f"cmp = hookscope.compare({str(path)!r}, resnet_tiny(), mode='isolate')\n"
        "print(json.dumps({'rows': len(cmp.rows), 'max': max(r.max_abs for r in cmp.rows),\n"
        "  'culprit': cmp.culprit, 'unmatched': [*cmp.unmatched_a, *cmp.unmatched_b],\n"
        "  'isolated': all(r.isolated for r in cmp.rows)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=600,
    )
    result = json.loads(out.stdout)
    assert result == {
        "rows": len(rec.calls),
        "max": 0.0,
        "culprit": None,
        "unmatched": [],
        "isolated": True,
    }


def test_gpt2_recording_round_trip_with_keyword_inputs(tmp_path: Path) -> None:
    path = tmp_path / "gpt2.safetensors"
    ids = gpt2_ids()
    hookscope.record(gpt2_tiny(), input_ids=ids, attention_mask=torch.ones_like(ids), path=path)
    back = load_recording(path)
    assert set(back.inputs) == {"kwargs/input_ids", "kwargs/attention_mask"}
    cmp = hookscope.compare(path, gpt2_tiny(), mode="isolate")
    assert cmp.culprit is None and not cmp.unmatched_a and not cmp.unmatched_b
    assert cmp.row("transformer.h.0.attn").isolated


def test_index_describes_every_tensor(tmp_path: Path) -> None:
    from safetensors import safe_open

    path = tmp_path / "cnn.safetensors"
    rec = hookscope.record(resnet_tiny(), torch.randn(1, 3, 32, 32), path=path)
    with safe_open(str(path), framework="pt") as handle:
        index = json.loads(handle.metadata()["hookscope"])
        keys = set(handle.keys())
    assert index["format"] == "hookscope-recording" and index["version"] == 1
    assert index["torch"] == torch.__version__ and index["device"] == "cpu"
    assert index["model"] == "ResNetLike"
    assert [c["name"] for c in index["calls"]][:3] == ["conv1", "bn1", "relu"]
    assert index["calls"][-1]["name"] == "" and index["calls"][-1]["start"] == 0
    entries = [e for c in index["calls"] for e in c["inputs"] + c["outputs"]] + index["inputs"]
    assert {e["key"] for e in entries} == keys
    first = index["calls"][0]["outputs"][0]
    assert first["shape"] == [1, 64, 16, 16] and first["dtype"] == "float32"
    back = load_recording(path)
    assert [c.label for c in back.calls] == [c.label for c in rec.calls]
    assert back.nbytes == rec.nbytes


def test_recording_on_side_b_and_a_fault_after_the_recording(tmp_path: Path) -> None:
    model = resnet_tiny()
    x = torch.randn(2, 3, 32, 32)
    hookscope.record(model, x, path=tmp_path / "before.safetensors")
    after = perturbed(model, "layer4.0.conv3.weight")
    cmp = hookscope.compare(tmp_path / "before.safetensors", after, mode="isolate")
    assert cmp.culprit is not None and cmp.culprit.name == "layer4.0.conv3"
    back = hookscope.compare(after, tmp_path / "before.safetensors", x)
    assert back.culprit is not None and back.culprit.name == "layer4.0.conv3"
    with pytest.raises(UsageError, match="B must be a model"):
        hookscope.compare(after, tmp_path / "before.safetensors", x, mode="isolate")


def test_byte_budget_is_checked_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    with pytest.raises(CaptureOverflowError, match="max_bytes=100,000"):
        hookscope.record(resnet_tiny(), torch.randn(1, 3, 32, 32), path=path, max_bytes=100_000)
    assert not path.exists() and not list(tmp_path.iterdir())


def test_bad_recordings_are_usage_errors(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    with pytest.raises(UsageError, match="not found"):
        load_recording(tmp_path / "missing.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file")
    with pytest.raises(UsageError, match="not a safetensors file"):
        load_recording(junk)
    plain = tmp_path / "plain.safetensors"
    save_file({"x": torch.zeros(2)}, str(plain))
    with pytest.raises(UsageError, match="no 'hookscope' index"):
        load_recording(plain)
    wrong = tmp_path / "wrong.safetensors"
    index = {"format": "hookscope-recording", "version": 1, "calls": [{"name": "a", "call": 0,
             "outputs": [{"path": "", "key": "nope"}]}]}  # fmt: skip
    save_file({"x": torch.zeros(2)}, str(wrong), metadata={"hookscope": json.dumps(index)})
    with pytest.raises(UsageError, match="bad recording index.*nope"):
        load_recording(wrong)


def test_another_tool_can_write_the_format(tmp_path: Path) -> None:
    """A file written by hand from the README's description compares against a live model."""
    from safetensors.torch import save_file

    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh()).eval()
    x = torch.randn(4, 3)
    with torch.no_grad():
        hidden = model[0](x)
        out = model[1](hidden)
    tensors = {"x": x, "h": hidden, "y": out + 1e-3}
    index = {
        "format": "hookscope-recording",
        "version": 1,
        "inputs": [{"path": "args/0", "key": "x"}],
        "calls": [
            {"name": "0", "call": 0, "outputs": [{"path": "", "key": "h"}]},
            {"name": "1", "call": 0, "outputs": [{"path": "", "key": "y"}]},
        ],
    }
    path = tmp_path / "other.safetensors"
    save_file(tensors, str(path), metadata={"hookscope": json.dumps(index)})
    cmp = hookscope.compare(path, model, atol=1e-4, rtol=0)
    assert cmp.row("0").max_abs == 0.0
    assert cmp.culprit is not None and cmp.culprit.name == "1"
    assert cmp.culprit.max_abs == pytest.approx(1e-3, rel=1e-3)
    assert cmp.unmatched_b == ("(root)",)


def _write_index(path: Path, index: dict[str, object]) -> Path:
    from safetensors.torch import save_file

    save_file({"y": torch.zeros(2)}, str(path), metadata={"hookscope": json.dumps(index)})
    return path


def _index(version: object = 1, **call: object) -> dict[str, object]:
    entry = {"name": "0", "call": 0, "outputs": [{"path": "", "key": "y"}], **call}
    return {"format": "hookscope-recording", "version": version, "calls": [entry]}


@pytest.mark.parametrize("version", [999, 0, "1", None, True, 1.0])
def test_unknown_recording_versions_are_refused(tmp_path: Path, version: object) -> None:
    path = _write_index(tmp_path / "v.safetensors", _index(version))
    with pytest.raises(UsageError, match=r"recording version .* is not supported"):
        load_recording(path)


@pytest.mark.parametrize(
    "name", ["../../etc/passwd<script>", "a..b", ".a", "a.", "a/b", "x<y", "a#1", "a\nb", 3]
)
def test_call_names_that_cannot_be_module_paths_are_refused(tmp_path: Path, name: object) -> None:
    path = _write_index(tmp_path / "n.safetensors", _index(name=name))
    with pytest.raises(UsageError, match="bad recording index.*call name"):
        load_recording(path)


@pytest.mark.parametrize("field", ["call", "start"])
@pytest.mark.parametrize("value", [-1, "0", 1.5, True])
def test_negative_or_non_int_call_indices_are_refused(
    tmp_path: Path, field: str, value: object
) -> None:
    path = _write_index(tmp_path / "c.safetensors", _index(**{field: value}))
    with pytest.raises(UsageError, match=f"{field}=.*int >= 0"):
        load_recording(path)


def test_module_paths_of_real_models_load(tmp_path: Path) -> None:
    for name in ["", "0", "transformer.h.0.attn.c_attn", "blocks.layer-1.conv_2", "x:y"]:
        path = _write_index(tmp_path / "ok.safetensors", _index(name=name, start=3))
        assert load_recording(path).calls[0].name == name
