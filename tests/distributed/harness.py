"""Starting real gloo process groups on CPU for tests: a free port each, a timeout on every join."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
import torch.distributed as tdist
import torch.multiprocessing as mp

WORLD = 2


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def init(rank: int, port: int) -> None:
    """Join the 2-process gloo group of a test (inside a worker)."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank))
    tdist.init_process_group("gloo", rank=rank, world_size=WORLD)


def _exiting(rank: int, worker: Callable[..., None], *args: Any) -> None:
    """Run the worker, then leave without the interpreter's teardown.

    Once ``torch._dynamo`` is loaded (FSDP's code loads it on first use), a
    gloo rank that ran async collectives aborts now and then in C++ static
    destructors at exit ("terminate called without an active exception"),
    after all its work is done (torch 2.13). A worker that raised still
    reports its traceback: only a clean return skips the teardown.
    """
    worker(rank, *args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def spawn(worker: Callable[..., None], *args: Any, timeout: float = 360.0) -> None:
    """Run ``worker(rank, port, *args)`` on 2 processes; fail (and kill them) past ``timeout``.

    A worker that raises fails the test with its traceback.
    """
    ctx = mp.start_processes(
        _exiting, args=(worker, free_port(), *args), nprocs=WORLD, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout
    while not ctx.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in ctx.processes:
                process.kill()
            pytest.fail(f"distributed workers still running after {timeout:g} s: a hang")
