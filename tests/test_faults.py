"""Bad input to every subcommand: exit code 2, one line on stderr, no traceback, no hang.

Two batches keep this fast (each hookscope process imports torch):

* every probe runs in ONE child process through ``hookscope.cli.main.main``,
  with stdout/stderr captured and a per-probe alarm, so a hang is a failure
  and not a stuck suite;
* a few probes run through the real ``hookscope`` executable, all at once,
  each under a timeout.

Files that existed before (an earlier output, a folder) are checked afterwards:
none lost, none changed, no temporary file left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

HUGE = "99999999999999999999,3,8,8"  # a size no tensor can have
TOO_BIG = "1000000,3,224,224"  # 602 GB of float32

DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, signal, sys, traceback
    from hookscope.cli.main import main

    def alarm(signum, frame):
        raise TimeoutError("probe hung")

    signal.signal(signal.SIGALRM, alarm)
    results = {}
    for name, argv in json.load(open(sys.argv[1])).items():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            signal.alarm(180)
            try:
                rc = main(argv)
            except SystemExit as exc:
                rc = exc.code
            except BaseException:
                traceback.print_exc()
                rc = "raised"
            finally:
                signal.alarm(0)
        results[name] = {"rc": rc, "out": out.getvalue(), "err": err.getvalue()}
    json.dump(results, sys.stdout)
    """
)

EXITS = "import sys\n\ndef build():\n    sys.exit(9)\n"
SCRIPT = "print('the script ran')\n"
MONITOR_LINE = '{"step": 0, "records": [], "alerts": [], "first_nonfinite": null}\n'
KEEP = "an earlier output that must survive\n"


def _workspace(root: Path) -> dict[str, str]:
    """The files the probes point at; returns ``{relative path: content}`` to check later."""
    (root / "exits.py").write_text(EXITS)
    (root / "script.py").write_text(SCRIPT)
    (root / "run").mkdir()
    (root / "run" / "monitor.jsonl").write_text(MONITOR_LINE)
    (root / "folder").mkdir()
    for name in ("keep.txt", "keep.json", "keep.html"):
        (root / name).write_text(KEEP)
    return {
        "exits.py": EXITS,
        "script.py": SCRIPT,
        "run/monitor.jsonl": MONITOR_LINE,
        "keep.txt": KEEP,
        "keep.json": KEEP,
        "keep.html": KEEP,
    }


ZOO = "hookscope.zoo:small_cnn"
IMG = ["--input-size", "1,3,32,32"]

#: name -> (argv, a fragment the one stderr line must hold)
PROBES: dict[str, tuple[list[str], str]] = {
    "summary-huge-size": (["summary", ZOO, "--input-size", HUGE], "99999999999999999999"),
    "summary-too-big-cpu": (
        ["summary", ZOO, "--input-size", TOO_BIG, "--device", "cpu"],
        "[1000000, 3, 224, 224]",
    ),
    "summary-factory-exits": (["summary", "exits.py:build", *IMG], "sys.exit(9)"),
    "summary-o-under-a-file": (["summary", ZOO, *IMG, "-o", "keep.txt/out.txt"], "keep.txt"),
    "summary-o-directory": (["summary", ZOO, *IMG, "-o", "folder"], "is a directory"),
    "summary-two-dtypes": (
        ["summary", ZOO, *IMG, "--dtype", "float32", "--dtype", "int64"],
        "2 dtypes for 1 input",
    ),
    "summary-bad-shape": (["summary", ZOO, "--input-size", "1,x"], "1,x"),
    "summary-no-file": (["summary", "missing.py:build", *IMG], "missing.py"),
    "summary-bad-kwargs": (["summary", ZOO, *IMG, "--kwargs", "{"], "--kwargs"),
    "doctor-too-big": (["doctor", ZOO, "--input-size", TOO_BIG], "[1000000, 3, 224, 224]"),
    "doctor-huge-size": (["doctor", ZOO, "--input-size", HUGE], "99999999999999999999"),
    "doctor-two-dtypes": (
        ["doctor", ZOO, *IMG, "--dtype", "float32", "--dtype", "float64"],
        "2 dtypes for 1 input",
    ),
    "doctor-factory-exits": (["doctor", "exits.py:build", "--input-size", "1,4"], "sys.exit(9)"),
    "doctor-out-under-a-file": (["doctor", ZOO, *IMG, "--out", "keep.json/d.json"], "keep.json"),
    "doctor-bad-device": (["doctor", ZOO, *IMG, "--device", "nonsense"], "nonsense"),
    "doctor-no-input": (["doctor", ZOO], "needs at least one --input-size"),
    "featuremaps-too-big": (
        ["featuremaps", ZOO, "--input-size", TOO_BIG, "-o", "maps"],
        "[1000000, 3, 224, 224]",
    ),
    "featuremaps-huge-size": (["featuremaps", ZOO, "--input-size", HUGE], "99999999999999999999"),
    "featuremaps-no-image": (["featuremaps", ZOO, "--input", "nope.png"], "nope.png"),
    "featuremaps-top-k": (["featuremaps", ZOO, "--top-k", "0"], "--top-k"),
    "featuremaps-factory-exits": (["featuremaps", "exits.py:build"], "sys.exit(9)"),
    "hooks-factory-exits": (["hooks", "exits.py:build"], "sys.exit(9)"),
    "hooks-bad-spec": (["hooks", "nocolon"], "nocolon"),
    "report-no-dir": (["report", "missing-run"], "missing-run"),
    "report-o-directory": (["report", "run", "-o", "folder"], "is a directory"),
    "report-o-under-a-file": (["report", "run", "-o", "keep.html/r.html"], "keep.html"),
    "report-missing-run-keeps-o": (["report", "missing-run", "-o", "keep.html"], "missing-run"),
    "run-monitor-out-is-a-file": (
        ["run", "--monitor", "--out", "keep.txt", "script.py"],
        "is a file",
    ),
    "run-monitor-out-under-a-file": (
        ["run", "--monitor", "--out", "keep.txt/run", "script.py"],
        "is a file",
    ),
    "run-no-script": (["run", "--doctor", "missing.py"], "missing.py"),
    "run-no-mode": (["run", "script.py"], "--doctor"),
    "demo-steps": (["demo", "--steps", "0"], "--steps"),
    "demo-out-is-a-file": (["demo", "--out", "keep.txt"], "keep.txt"),
    "lint-missing-path": (["lint", "missing-dir"], "missing-dir"),
    "lint-bad-select": (["lint", "script.py", "--select", "ZZ9"], "ZZ9"),
    "unknown-option": (["summary", ZOO, "--no-such-option"], "--no-such-option"),
}

#: A few probes through the real executable (each costs a torch import; every
#: subcommand already runs in a child process above).
EXECUTABLE = (
    "summary-huge-size",
    "report-o-directory",
    "run-monitor-out-is-a-file",
    "lint-missing-path",
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("faults")
    return root, _workspace(root)


@pytest.fixture(scope="module")
def in_process(workspace: tuple[Path, dict[str, str]]) -> dict[str, Any]:
    root, _ = workspace
    (root / "probes.json").write_text(json.dumps({k: v[0] for k, v in PROBES.items()}))
    (root / "driver.py").write_text(DRIVER)
    done = subprocess.run(
        [sys.executable, "driver.py", "probes.json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, Any] = json.loads(done.stdout)
    return results


@pytest.fixture(scope="module")
def executable(workspace: tuple[Path, dict[str, str]]) -> dict[str, Any]:
    root, _ = workspace
    program = shutil.which("hookscope", path=str(Path(sys.executable).parent))
    assert program is not None
    running = {
        name: subprocess.Popen(
            [program, *PROBES[name][0]],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for name in EXECUTABLE
    }
    results = {}
    for name, process in running.items():
        try:
            out, err = process.communicate(timeout=400)  # generous: CI machines are shared
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            results[name] = {"rc": "hung", "out": out, "err": err}
            continue
        results[name] = {"rc": process.returncode, "out": out, "err": err}
    return results


def _check(result: dict[str, Any], fragment: str) -> None:
    everything = result["out"] + result["err"]
    assert "Traceback" not in everything, everything
    assert result["rc"] == 2, everything
    lines = [line for line in result["err"].splitlines() if line.strip()]
    assert len(lines) == 1, result["err"]
    assert fragment in lines[0]


@pytest.mark.parametrize("name", sorted(PROBES))
def test_bad_input_is_one_line_and_exit_2(name: str, in_process: dict[str, Any]) -> None:
    _check(in_process[name], PROBES[name][1])


@pytest.mark.parametrize("name", EXECUTABLE)
def test_the_executable_exits_2_in_one_line(name: str, executable: dict[str, Any]) -> None:
    _check(executable[name], PROBES[name][1])


def test_no_file_lost_changed_or_half_written(
    workspace: tuple[Path, dict[str, str]], in_process: dict[str, Any], executable: dict[str, Any]
) -> None:
    root, before = workspace
    for relative, content in before.items():
        assert (root / relative).read_text() == content, relative
    assert (root / "folder").is_dir() and not any((root / "folder").iterdir())
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]
    assert not (root / "maps").exists()
