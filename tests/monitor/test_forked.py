"""A process forked from a monitored one records nothing; the parent goes on as before."""

from __future__ import annotations

import multiprocessing as mp
import sys
from multiprocessing.connection import Connection

import pytest
import torch
from torch import nn

import hookscope

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no fork on Windows")


def _child(model: nn.Module, mon: hookscope.Monitor, conn: Connection) -> None:
    before = len(mon.results)
    for _ in range(3):
        model(torch.randn(4, 3)).sum().backward()
        mon.step()
    conn.send((before, len(mon.results), mon.pending))
    conn.close()


def test_forked_child_records_nothing_and_parent_goes_on() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    with hookscope.Monitor(model) as mon:
        model(torch.randn(4, 3)).sum().backward()
        mon.step()
        parent_end, child_end = mp.get_context("fork").Pipe()
        child = mp.get_context("fork").Process(target=_child, args=(model, mon, child_end))
        child.start()
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
            pytest.fail("the forked child did not finish within 60 s")
        assert child.exitcode == 0
        assert parent_end.poll(5)
        before, after, pending = parent_end.recv()
        assert (before, after, pending) == (1, 1, False)  # nothing recorded in the child
        model(torch.randn(4, 3)).sum().backward()
        result = mon.step()
        assert result is not None and result.records  # the parent still records
    assert len(mon.results) == 2
