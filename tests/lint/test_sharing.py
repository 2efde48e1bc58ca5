"""Tasks shared between this process and forked workers (`hookscope.lint.engine.sharing`).

Each test runs in a fresh interpreter (with a timeout): the workers are forked
from it, and a test must never fork pytest itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TASKS = """\
import os, time

PARENT = os.getpid()


def square(x):
    time.sleep(0.002)
    return x * x, os.getpid()


def logged(x, log, fail):
    with open(log, "a") as out:
        out.write(f"{x}\\n")
    time.sleep(0.01)
    if fail(x):
        raise ValueError(x)
    return x


def in_worker(x):
    return os.getpid() != PARENT


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("no")
"""


def _run(tmp_path: Path, body: str, fork: bool = True) -> list[str]:
    (tmp_path / "tasks.py").write_text(TASKS, encoding="utf-8")
    code = (
        "import os, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from tasks import *\n"
        "from hookscope.lint.engine import sharing\n"
        "from hookscope.lint.engine.sharing import shared_map\n"
        f"sharing.FORK = {fork}\n" + body
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return proc.stdout.split()


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_every_result_comes_once_and_the_caller_works(tmp_path: Path, jobs: int) -> None:
    out = _run(
        tmp_path,
        f"results = list(shared_map(square, square, list(range(300)), {jobs}))\n"
        "assert sorted(i for i, _ in results) == list(range(300)), results\n"
        "assert all(value == i * i for i, (value, _) in results)\n"
        "pids = {pid for _, (_, pid) in results}\n"
        "print(len(pids), os.getpid() in pids)\n",
    )
    # jobs=3: this process and two workers; each takes the next task when done.
    assert out == [str(jobs), "True"]


def test_without_fork_a_process_pool_does_the_work(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "results = list(shared_map(square, square, list(range(60)), 2))\n"
        "assert sorted(i for i, _ in results) == list(range(60)), results\n"
        "assert all(value == i * i for i, (value, _) in results)\n"
        "print(os.getpid() in {pid for _, (_, pid) in results})\n",
        fork=False,
    )
    assert out == ["False"]  # the pool's workers computed everything


def test_more_tasks_than_the_ticket_pipe_holds(tmp_path: Path) -> None:
    # 40,000 tickets of 4 bytes do not fit a 64 KiB pipe: a ticket then stands for
    # a run of tasks, and every task still runs once.
    out = _run(
        tmp_path,
        "results = list(shared_map(abs, abs, list(range(-40_000, 0)), 2))\n"
        "assert sorted(i for i, _ in results) == list(range(40_000))\n"
        "assert all(value == 40_000 - i for i, value in results)\n"
        "print(len(results))\n",
    )
    assert out == ["40000"]


@pytest.mark.parametrize("where", ["in the worker", "in this process", "in either"])
def test_an_error_is_raised_here_and_the_tasks_left_never_run(tmp_path: Path, where: str) -> None:
    log = tmp_path / "ran.log"
    fail = {
        "in the worker": "in_worker",
        "in this process": "lambda x: not in_worker(x)",
        "in either": "lambda x: x == 3",
    }[where]
    out = _run(
        tmp_path,
        "import functools\n"
        f"work = functools.partial(logged, log={str(log)!r}, fail={fail})\n"
        "try:\n"
        "    list(shared_map(work, work, list(range(200)), 2))\n"
        "except ValueError as exc:\n"
        "    notes = getattr(exc, '__notes__', [''])\n"
        "    print('raised', exc, 'worker' if 'in the worker process' in notes[0] else 'here')\n",
    )
    assert out[0] == "raised"
    if where == "in either":
        assert out[1] == "3"
    else:
        assert out[2] == ("worker" if where == "in the worker" else "here")
    ran = log.read_text(encoding="utf-8").split()
    assert len(set(ran)) == len(ran)  # no task twice
    assert len(ran) < 20  # not the 200: each process stops after the task it was running


def test_a_worker_that_dies_ends_the_run_with_a_lint_error(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "from hookscope.errors import LintError\n"
        "def work(x):\n"
        "    if in_worker(x):\n"
        "        os._exit(3)\n"
        "    return square(x)\n"
        "try:\n"
        "    list(shared_map(work, work, list(range(100)), 2))\n"
        "except LintError as exc:\n"
        "    print(str(exc).replace(' ', '_'))\n",
    )
    assert out == ["a_lint_worker_process_ended_early_(exit_code_3)"]


def test_an_exception_that_cannot_be_pickled_comes_back_as_a_lint_error(tmp_path: Path) -> None:
    out = _run(
        tmp_path,
        "from hookscope.errors import LintError\n"
        "def work(x):\n"
        "    if in_worker(x):\n"
        "        raise Unpicklable('boom')\n"
        "    return square(x)\n"
        "try:\n"
        "    list(shared_map(work, work, list(range(100)), 2))\n"
        "except LintError as exc:\n"
        "    print('Unpicklable' in str(exc), 'boom' in str(exc))\n",
    )
    assert out == ["True", "True"]
