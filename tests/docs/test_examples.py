"""Every script in examples/ runs to the end, as a user would run it (in a temp dir)."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hookscope.errors import HookscopeWarning
from tests.docs.blocks import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# torch.compile, several processes, or a trainer / transformers import: tens of seconds each
SLOW = {
    "compare_precision_compile.py",
    "featuremaps_capture.py",
    "monitor_compiled.py",
    "monitor_distributed.py",
    "summary_llama7b_meta.py",
    "trainer_accelerate.py",
    "trainer_lightning.py",
    "trainer_transformers.py",
}
NEEDS = {"lint_torchsharp.py": "tree_sitter_c_sharp", "summary_llama7b_meta.py": "transformers"}


def test_the_slow_list_names_real_examples() -> None:
    assert {path.name for path in EXAMPLES} >= SLOW


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else [])
        for p in EXAMPLES
    ],
)
def test_example_runs(script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if script.name in NEEDS:
        pytest.importorskip(NEEDS[script.name], reason=f"{script.name} needs an extra")
    if script.name in SLOW:  # its own process: compiled graphs, spawned ranks, trainers
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
        env.setdefault("OMP_NUM_THREADS", "1")
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{script.name}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    else:  # in this process, as `python script.py` would run it: no torch import per script
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "argv", [str(script)])
        with warnings.catch_warnings():
            warnings.simplefilter("default", HookscopeWarning)  # shown on purpose by some
            runpy.run_path(str(script), run_name="__main__")
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    outside = [p for p in written if p.relative_to(tmp_path).parts[0] != "runs"]
    assert outside == [], f"{script.name} writes outside runs/: {outside}"
