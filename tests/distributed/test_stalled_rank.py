"""``ranks="reduce"`` with a rank that stalls or dies: one wait, one error, an honest message.

Rank 1 stops calling ``step`` after step 0 (alive but elsewhere, or gone).
Rank 0's next step waits for step 1's all-reduces once; leaving the ``with``
block must not start and wait for another round (it used to: twice the
timeout, and a second error chained to the first). A rank that died makes
the wait fail early: the message says how long it waited, not the timeout.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import hookscope
from hookscope.errors import DistributedError
from tests.distributed.harness import init, spawn
from tests.distributed.workers import Tiny, batch

pytestmark = pytest.mark.slow
TIMEOUT = 3


def worker(rank: int, port: int, out: str, dies: bool) -> None:
    os.environ["HOOKSCOPE_COLLECTIVE_TIMEOUT"] = str(TIMEOUT)
    init(rank, port)
    model = Tiny()
    start = time.monotonic()
    caught: BaseException | None = None
    try:
        with hookscope.Monitor(model, ranks="reduce") as mon:
            model(batch(0, rank)).sum().backward()
            mon.step()
            if rank == 1:
                if not dies:
                    time.sleep(4 * TIMEOUT)  # alive, but never in the collectives again
                os._exit(0)
            if dies:
                time.sleep(1)  # rank 1 is gone
            start = time.monotonic()
            for step in (1, 2, 3):
                model(batch(step, rank)).sum().backward()
                mon.step()
    except DistributedError as exc:
        caught = exc
    took = time.monotonic() - start
    chained = caught is not None and isinstance(caught.__context__, DistributedError)
    Path(out, "rank0.txt").write_text(f"{took:.2f}\n{int(chained)}\n{caught}")
    os._exit(0)  # the group is unusable after a failed collective


def _result(out: Path) -> tuple[float, bool, str]:
    took, chained, message = (out / "rank0.txt").read_text().split("\n", 2)
    return float(took), chained == "1", message


def test_a_stalled_rank_costs_one_timeout_and_one_error(tmp_path: Path) -> None:
    spawn(worker, str(tmp_path), False, timeout=120)
    took, chained, message = _result(tmp_path)
    assert message.startswith(f"rank 0: Monitor.step() waited {TIMEOUT} s for the other ranks")
    assert not chained  # close() did not wait a second time and raise again
    print(f"rank 0 raised after {took:.1f} s (timeout {TIMEOUT} s)")


def test_a_dead_rank_is_reported_with_the_real_wait(tmp_path: Path) -> None:
    spawn(worker, str(tmp_path), True, timeout=120)
    took, chained, message = _result(tmp_path)
    assert not chained
    if took < 0.9 * TIMEOUT:  # gloo saw the closed connection
        assert f"waited {TIMEOUT} s" not in message
        assert message.startswith("rank 0: Monitor.step() failed after ")
        assert "a rank has probably exited" in message
