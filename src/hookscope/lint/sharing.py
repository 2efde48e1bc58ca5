"""Share a list of tasks between worker processes and the calling process.

With ``jobs`` processes, ``jobs - 1`` workers are started and the caller is the
last one: it does not sit idle while they work. Every task is submitted up front;
the workers take tasks from the front, the caller takes them from the back for
as long as they have not been handed to a worker (a task a worker has not
started can still be cancelled), so both sides stay busy until they meet.

Compared with ``jobs`` workers and an idle caller, this starts one process fewer
and sends the results of the caller's share through no pipe (nothing is pickled
for them); the caller's share also reuses what this process has already cached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def shared_map(
    remote: Callable[[T], R],
    local: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[tuple[int, R]]:
    """``(i, result)`` for every ``items[i]``, in the order the results come.

    ``remote`` runs in the workers (a picklable function; ``initializer(*initargs)``
    prepares each worker) and ``local`` in this process; both must compute the same
    thing. With ``jobs <= 1`` everything runs here, in order, and no process starts.
    """
    if jobs <= 1 or len(items) < 2:
        yield from ((i, local(item)) for i, item in enumerate(items))
        return
    # Imported here: it pulls in multiprocessing (~30-70 ms), which a single-file
    # run (the pre-commit hook, an editor) never needs.
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs - 1, initializer=initializer, initargs=initargs) as pool:
        futures = [pool.submit(remote, item) for item in items]
        try:
            for i in reversed(range(len(items))):
                if not futures[i].cancel():
                    break  # a worker has it: the workers have every task before it too
                yield i, local(items[i])
            for i, future in enumerate(futures):
                if not future.cancelled():
                    yield i, future.result()
        finally:  # an error (or Ctrl-C) here: the pool ends without the tasks left
            for future in futures:
                future.cancel()
