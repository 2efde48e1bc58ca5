"""Share a list of tasks between this process and forked workers.

With ``jobs`` processes, ``jobs - 1`` workers are forked and the caller works too. Every
process claims one task at a time from a pipe of task numbers ("tickets"), so no task
waits behind a busy process; workers send results back through a second pipe, read by
the caller between its own tasks. A fork starts in milliseconds and inherits the caller's
memory (the class index costs nothing to hand over). Where ``os.fork`` is missing or
unsafe (Windows; macOS), a `concurrent.futures` process pool does the work instead.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from typing import Any, TypeVar

from hookscope.errors import LintError

T = TypeVar("T")
R = TypeVar("R")

# Whether workers are forked; elsewhere (and in tests that turn it off) a pool runs them.
FORK = hasattr(os, "fork") and sys.platform != "darwin"
_TICKET = 4  # bytes per task number
_HEADER = 8  # bytes of the length that precedes each pickled result
_RESULTS_PIPE = 1 << 20  # a result pipe this big lets workers write without waiting


def shared_map(
    remote: Callable[[T], R],
    local: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[tuple[int, R]]:
    """``(i, result)`` for every ``items[i]``, in the order the results come.

    ``local`` runs here and in forked workers. Without ``os.fork``, ``remote`` (picklable;
    ``initializer(*initargs)`` prepares each worker) runs in a process pool and this
    process only collects; both must compute the same thing. With ``jobs <= 1`` all runs
    here, in order. An exception in a task is raised here; the tasks nobody started never
    run, and the workers are ended.
    """
    if jobs <= 1 or len(items) < 2:
        yield from ((i, local(item)) for i, item in enumerate(items))
    elif FORK:
        yield from _forked(local, items, min(jobs, len(items)))
    else:
        yield from _pooled(remote, items, jobs, initializer, initargs)


def _forked(work: Callable[[T], R], items: Sequence[T], jobs: int) -> Iterator[tuple[int, R]]:
    tickets, runs = _tickets(len(items))
    results_in, results_out = os.pipe()
    _enlarge(results_out)
    workers: list[int] = []
    try:
        try:
            for _ in range(jobs - 1):
                pid = os.fork()
                if pid == 0:  # the worker: never returns into the caller's code
                    os.close(results_in)
                    _work(work, items, tickets, runs, results_out)
                workers.append(pid)
        finally:
            os.close(results_out)  # the workers' end: the pipe ends when they have ended
        os.set_blocking(results_in, False)
        inbox, done = _Inbox(results_in), 0
        while ticket := os.read(tickets, _TICKET):
            for i in runs(int.from_bytes(ticket, "little")):
                yield i, work(items[i])
                done += 1
            yield from inbox.arrived()
        os.set_blocking(results_in, True)
        yield from inbox.arrived(until_closed=True)
        if done + inbox.count < len(items):
            raise LintError(f"a lint worker process ended early ({_ends(workers)})")
    finally:
        _stop(tickets, workers)
        os.close(results_in)


def _tickets(count: int) -> tuple[int, Callable[[int], range]]:
    """A pipe holding a ticket for each run of tasks, and the tasks of a ticket.

    One ticket per task, or per run of consecutive tasks when the pipe cannot hold that
    many. It is filled and its write end closed first: a read finds a ticket or the end.
    """
    out, into = os.pipe()
    per = -(-count * _TICKET // _capacity(into))  # tasks per ticket, rounded up
    numbers = range(-(-count // per))
    os.write(into, b"".join(n.to_bytes(_TICKET, "little") for n in numbers))
    os.close(into)

    def runs(ticket: int) -> range:
        return range(ticket * per, min(count, (ticket + 1) * per))

    return out, runs


def _capacity(pipe: int) -> int:
    """Bytes a pipe holds before a write blocks (POSIX guarantees at least 512)."""
    try:
        import fcntl

        return int(fcntl.fcntl(pipe, fcntl.F_GETPIPE_SZ))  # Linux
    except (ImportError, AttributeError, OSError):
        return 512


def _enlarge(pipe: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, _RESULTS_PIPE)  # Linux, best effort
    except (ImportError, AttributeError, OSError):
        pass  # a smaller pipe: a worker waits for the caller to read now and then


def _work(
    work: Callable[[T], R],
    items: Sequence[T],
    tickets: int,
    runs: Callable[[int], range],
    results: int,
) -> None:
    """A worker's life: tasks until the tickets run out or one fails, then ``_exit``."""
    code = 0
    try:
        while ticket := os.read(tickets, _TICKET):
            for i in runs(int.from_bytes(ticket, "little")):
                try:
                    message = pickle.dumps((i, True, work(items[i])), pickle.HIGHEST_PROTOCOL)
                except BaseException as exc:  # sent to the caller and raised there
                    _send(results, pickle.dumps((i, False, _portable(exc))))
                    return
                _send(results, message)
    except BaseException:  # the caller is gone, or Ctrl-C: just end
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no buffers of the caller flushed twice


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a `LintError` naming it; with the worker's traceback."""
    import traceback

    where = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # anything that does not round-trip
        exc = LintError(f"a lint worker failed: {exc!r}")
    if sys.version_info >= (3, 11):
        exc.add_note(f"in the worker process:\n{where}")
    return exc


def _send(pipe: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(_HEADER, "little") + data)
    while view:
        view = view[os.write(pipe, view) :]


class _Inbox:
    """Results of the workers, read from the pipe whenever the caller looks."""

    def __init__(self, pipe: int) -> None:
        self._pipe = pipe
        self._buffer = bytearray()
        self.count = 0

    def arrived(self, until_closed: bool = False) -> Iterator[tuple[int, Any]]:
        """The results that have arrived; with ``until_closed``, all up to the workers' end.

        Raises:
            Exception: the one a task raised in a worker.
        """
        while True:
            try:
                chunk = os.read(self._pipe, _RESULTS_PIPE)
            except BlockingIOError:  # nothing more for now
                return
            self._buffer += chunk
            yield from self._complete()
            if not chunk:  # every worker closed its end
                return

    def _complete(self) -> Iterator[tuple[int, Any]]:
        buffer, start = self._buffer, 0
        while len(buffer) - start >= _HEADER:
            size = int.from_bytes(buffer[start : start + _HEADER], "little")
            end = start + _HEADER + size
            if len(buffer) < end:
                break
            i, ok, value = pickle.loads(buffer[start + _HEADER : end])
            start = end
            if not ok:
                raise value
            self.count += 1
            yield i, value
        del buffer[:start]


def _stop(tickets: int, workers: list[int]) -> None:
    """End the run: every worker ended (killed when still busy: after an error) and reaped."""
    import signal

    os.close(tickets)
    for pid in workers:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # one that ended by itself is a zombie: harmless
        os.waitpid(pid, 0)


def _ends(workers: list[int]) -> str:
    """How the workers ended, for a message: ``exit code 1``, ``killed by signal 9``."""
    ends = []
    for pid in workers:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        ends.append(f"exit code {code}" if code >= 0 else f"killed by signal {-code}")
    workers.clear()  # reaped
    return ", ".join(ends)


def _pooled(
    remote: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> Iterator[tuple[int, R]]:
    # Imported here: it pulls in multiprocessing (~30-70 ms), which most runs never need.
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, initializer=initializer, initargs=initargs) as pool:
        futures = [pool.submit(remote, item) for item in items]
        try:
            for i, future in enumerate(futures):
                yield i, future.result()
        finally:  # an error (or Ctrl-C) here: the pool ends without the tasks left
            for future in futures:
                future.cancel()
