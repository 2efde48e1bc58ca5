"""Every code block of the README and the docs runs (see `tests.docs.blocks` for the markers).

Fast python blocks run in this process (a fresh namespace, in a temp dir); slow
ones and every bash block run in a child process, so nothing compiled or
spawned there outlives the block.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hookscope.cli.main import main
from hookscope.errors import HookscopeWarning
from tests.docs.blocks import (
    ROOT,
    Block,
    commands,
    files_before,
    in_process,
    pages,
    program,
    read_blocks,
    runnable,
    shell_script,
)

SEEDS = {"train.py": ROOT / "examples" / "train.py", "model.py": ROOT / "examples" / "model.py"}
ALL = {path: read_blocks(path) for path in pages()}


def _params(lang: str) -> list[object]:
    params = []
    for blocks in ALL.values():
        for block in runnable(blocks):
            if block.lang == lang:
                marks = [pytest.mark.slow] if block.mark == "slow" else []
                params.append(pytest.param(block, blocks, id=block.id, marks=marks))
    return params


def _workdir(tmp_path: Path, block: Block, blocks: list[Block]) -> Path:
    for name, source in SEEDS.items():
        shutil.copy(source, tmp_path / name)
    for name, content in files_before(blocks, block).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    return tmp_path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(command: list[str], cwd: Path, block: Block) -> None:
    timeout = 600 if block.mark == "slow" else 300
    done = subprocess.run(
        command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.mark.parametrize(("block", "blocks"), _params("python"))
def test_python_block(
    block: Block, blocks: list[Block], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = _workdir(tmp_path, block, blocks)
    source = program(block)
    if block.mark == "slow":
        (cwd / "block.py").write_text(source)
        _run([sys.executable, "block.py"], cwd, block)
        return
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(cwd))
    try:
        with warnings.catch_warnings():
            # a page may show one of hookscope's own warnings on purpose; any other is an error
            warnings.simplefilter("default", HookscopeWarning)
            exec(compile(source, block.id, "exec"), {"__name__": "__main__"})
    finally:
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")


@pytest.mark.parametrize(("block", "blocks"), _params("bash"))
def test_bash_block(
    block: Block,
    blocks: list[Block],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cwd = _workdir(tmp_path, block, blocks)
    if block.mark == "slow":
        (cwd / "block.sh").write_text(shell_script(block))
        _run(["bash", "block.sh"], cwd, block)
        return
    # `hookscope ...` lines run in this process (no torch import per command); the rest,
    # and everything of a slow block, in bash
    monkeypatch.chdir(cwd)
    for line, command, expected in commands(block):
        args = in_process(command)
        if args is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("default", HookscopeWarning)
                code = main(args)
            output = capsys.readouterr()
            detail = f"{output.out[-2000:]}\n{output.err[-2000:]}"
        else:
            done = subprocess.run(
                ["bash", "-c", command], env=_env(), capture_output=True, text=True, timeout=300
            )
            code, detail = done.returncode, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert code == expected, f"{block.page}:{line}: `{command}` exited {code}:\n{detail}"


def test_every_page_has_its_blocks_read() -> None:
    readme = ALL[ROOT / "README.md"]
    assert any(b.lang == "python" for b in readme)
    assert any(b.lang == "bash" for b in readme)
    untagged = [b.id for blocks in ALL.values() for b in blocks if not b.lang]
    assert untagged == [], "give every fenced block a language (text for output)"
