"""``hookscope run`` on trainer scripts: no false bypasses, planted ones found, one step per update."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from hookscope.cli.main import main
from hookscope.sinks.jsonl import read_jsonl

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning:accelerate.*")

SCRIPTS = Path(__file__).parent / "scripts"


def _planted_line(script: Path) -> int:
    lines = script.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.endswith("PLANTED"))


def _run(tmp_path: Path, script: str, *flags: str) -> tuple[dict[str, object], str]:
    out = tmp_path / "run"
    code = main(
        [
            "run",
            "--doctor",
            "--monitor",
            "--every",
            "1",
            "--out",
            str(out),
            str(SCRIPTS / script),
            *flags,
        ]
    )
    assert code == 0
    return json.loads((out / "doctor.json").read_text()), str(out)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "flags"),
    [
        ("gpt2_trainer.py", ["--plant"]),
        ("gpt2_trainer.py", ["--plant", "--checkpointing"]),
        ("accelerate_bf16.py", ["--plant"]),
    ],
)
def test_only_the_planted_forward_is_reported_and_steps_follow_the_optimizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], script: str, flags: list[str]
) -> None:
    report, out = _run(tmp_path, script, *flags)
    # transformers' GradientCheckpointingLayer wrapper (and its recompute) and
    # accelerate's autocast / fp32-output wrappers are not reported; the planted call is.
    [bypass] = report["bypasses"]  # type: ignore[misc]
    assert bypass["call_site"] == f"{SCRIPTS / script}:{_planted_line(SCRIPTS / script)}"
    # 12 samples, batch 2, gradient accumulation 2: 3 optimizer steps.
    assert [line["step"] for line in read_jsonl(Path(out) / "monitor.jsonl")] == [0, 1, 2]
    assert "monitor.jsonl: 3 step(s), one per optimizer step" in capsys.readouterr().err


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "script.py"
    path.write_text(
        "import torch\nfrom torch import nn\n"
        "torch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))\n"
        + textwrap.dedent(body)
    )
    return path


def test_gradient_accumulation_gives_one_step_per_optimizer_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(
        tmp_path,
        """
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(12):  # 3 forwards per optimizer step
            model(torch.randn(2, 4)).sum().backward()
            if i % 3 == 2:
                opt.step()
                opt.zero_grad()
        """,
    )
    assert (
        main(["run", "--monitor", "--every", "1", "--out", str(tmp_path / "out"), str(script)]) == 0
    )
    lines = read_jsonl(tmp_path / "out" / "monitor.jsonl")
    assert len(lines) == 4
    assert "4 step(s), one per optimizer step" in capsys.readouterr().err


def test_without_an_optimizer_each_forward_is_a_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(
        tmp_path,
        """
        with torch.no_grad():
            for _ in range(5):
                model(torch.randn(2, 4))
        """,
    )
    assert (
        main(["run", "--monitor", "--every", "1", "--out", str(tmp_path / "out"), str(script)]) == 0
    )
    assert len(read_jsonl(tmp_path / "out" / "monitor.jsonl")) == 5
    assert "5 step(s), one per forward (no optimizer)" in capsys.readouterr().err
