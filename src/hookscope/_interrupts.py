"""Ctrl-C that cannot land while hookscope holds a piece of the user's state.

Several calls borrow something and must give it back: `summary` swaps every
parameter for a meta stand-in, a session adds hooks and removes them, the
doctor patches ``forward`` methods. A ``KeyboardInterrupt`` raised between
taking a value and putting it back loses it (parameters left on ``meta``,
hooks left on the model).

CPython runs a Python signal handler only at a few points: when a function
starts, at a loop's backward jump and after a call returns. While `guard` is
active, SIGINT's handler is `_handler`: it looks at the frames it interrupted,
and inside a function wrapped by `critical` (or a `critical_contextmanager`'s
enter and exit) it only notes the interrupt; the outermost critical function
raises it (through the handler that was installed before, so by default a
``KeyboardInterrupt``) when it returns. Everywhere else it calls that handler
at once, so a user's own code interrupts as usual.

The rules that make a borrow safe: take a value inside a critical function
that records what it took in a container made before the ``try``; put it back
in a critical function called first thing in the ``finally``, in an order
that is safe to repeat. A context manager from `critical_contextmanager` does
both: when an interrupt arrived during its set-up, it runs its own tear-down
before raising, since ``with`` never calls ``__exit__`` after a failed
``__enter__``.

Other signals whose Python handler may raise (a timer's SIGALRM, a
trainer's SIGTERM handler) are held the same way while a guard is active:
`_handler` stands in for their handlers too and hands each signal on to the
handler it replaced, at once or when the outermost critical function returns.

Outside the main thread (where no signal handler runs) and where no signal
has a Python handler, nothing is installed and `critical` costs one call.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from types import CodeType, FrameType, TracebackType
from typing import Any, ParamSpec, TypeVar

__all__ = [
    "critical",
    "critical_contextmanager",
    "guard",
    "guarded",
    "interruptible",
    "setup_interrupted",
]

P = ParamSpec("P")
T = TypeVar("T")

Handler = Callable[[int, FrameType | None], Any]


class _State:
    """The handler's state (only the main thread touches it)."""

    depth = 0  # active guards
    previous: dict[int, Handler] = {}  # signal -> the handler `_handler` stands in for
    pending: tuple[int, ...] = ()  # signals noted inside a critical function


#: The signals `_handler` stands in for: SIGINT, and others whose Python handler may raise.
_SIGNALS: tuple[int, ...] = tuple(
    getattr(signal, name)
    for name in (
        "SIGINT",
        "SIGALRM",
        "SIGVTALRM",
        "SIGPROF",
        "SIGTERM",
        "SIGHUP",
        "SIGUSR1",
        "SIGUSR2",
    )
    if hasattr(signal, name)
)


_STATE = _State()
#: Code objects of the wrappers that mark a frame critical.
_CODES: set[CodeType] = set()
#: The code object of `interruptible`'s wrapper: below it, interrupts raise again.
_OPEN: set[CodeType] = set()


def _inside_critical(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if code in _CODES:
            return True
        if code in _OPEN:
            return False
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    if _inside_critical(frame):
        _STATE.pending += (signum,)
        return
    _forward(signum, frame)


def _forward(signum: int, frame: FrameType | None) -> None:
    previous = _STATE.previous.get(signum)
    if previous is None and signum == signal.SIGINT:
        previous = signal.default_int_handler
    if previous is not None:
        previous(signum, frame)


def _deliver_if_outermost(caller: FrameType | None) -> None:
    if _STATE.pending and not _inside_critical(caller):
        signums, _STATE.pending = _STATE.pending, ()
        for signum in signums:
            _forward(signum, caller)


def critical(fn: Callable[P, T]) -> Callable[P, T]:
    """``fn`` runs to its end under SIGINT; an interrupt that came meanwhile is raised after.

    Only while a `guard` is active (otherwise ``fn`` runs as is).
    """

    @functools.wraps(fn)
    def run_critical(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            if _STATE.pending:
                _deliver_if_outermost(sys._getframe(1))

    return run_critical


def interruptible(fn: Callable[P, T]) -> Callable[P, T]:
    """``fn`` interrupts as usual, also when called from a critical function.

    For long waits inside a tear-down (a collective, a flush): the critical
    caller puts its state back in a ``finally`` after it.
    """

    @functools.wraps(fn)
    def run_interruptible(*args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    return run_interruptible


_WRAPPER: CodeType = critical(lambda: None).__code__
_CODES.add(_WRAPPER)
_OPEN.add(interruptible(lambda: None).__code__)


def setup_interrupted() -> bool:
    """In a critical ``__enter__``: an interrupt came during it and is raised when it returns.

    ``with`` never calls ``__exit__`` after a failed ``__enter__``, so the
    caller must undo its set-up first.
    """
    if not _STATE.pending:
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code is not _WRAPPER:
        frame = frame.f_back
    return frame is not None and not _inside_critical(frame.f_back)


#: signal.signal / getsignal without their enum conversions (10-20 µs a call on 3.11):
#: the C functions they wrap, where there are (CPython's ``_signal``).
_c_signal: Any = sys.modules.get("_signal") or signal
_getsignal: Callable[[int], Any] = _c_signal.getsignal
_setsignal: Callable[[int, Any], Any] = _c_signal.signal


@critical
def _install() -> bool:
    if threading.current_thread() is not threading.main_thread():
        return False
    ours = False
    for signum in _SIGNALS:
        current = _getsignal(signum)
        if current is _handler:
            ours = True
        elif callable(current):  # SIG_IGN, SIG_DFL or not set from Python: leave it
            _STATE.previous[signum] = current  # recorded before it is replaced
            _setsignal(signum, _handler)
            ours = True
    if ours:
        _STATE.depth += 1
    return ours


@critical
def _uninstall() -> None:
    _STATE.depth -= 1
    if _STATE.depth or threading.current_thread() is not threading.main_thread():
        return  # (closed from another thread: the handler stays, handing every signal on)
    for signum in _SIGNALS:
        if _getsignal(signum) is _handler:
            _setsignal(signum, _STATE.previous.get(signum, signal.default_int_handler))


class guard:
    """Install the SIGINT handler that `critical` relies on, for the object's lifetime.

    Use ``with guard():`` around a call, or `guarded` for an object whose
    borrow spans the caller's code (a session). Nested guards share one handler.
    """

    def __init__(self) -> None:
        self._installed = False

    @critical
    def __enter__(self) -> guard:
        self.start()
        return self

    @critical
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @critical
    def start(self) -> None:
        """Install (idempotent)."""
        if not self._installed:
            self._installed = _install()

    @critical
    def stop(self) -> None:
        """Uninstall what `start` installed (idempotent)."""
        if self._installed:
            self._installed = False
            _uninstall()


def guarded() -> guard:
    """A started `guard`; call its ``stop()`` when the borrow ends."""
    held = guard()
    held.start()
    return held


class _CriticalContext(contextlib.AbstractContextManager[T]):
    """A generator context manager whose set-up and tear-down run `critical`."""

    def __init__(self, gen: Generator[T, None, None]) -> None:
        self._gen = gen
        self._guard = guard()
        self._entered = False

    @critical
    def __enter__(self) -> T:
        self._guard.start()
        try:
            value = next(self._gen)
        except BaseException:
            self._guard.stop()
            raise
        self._entered = True
        if setup_interrupted():
            self.__exit__(None, None, None)
        return value

    @critical
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        try:
            if not self._entered:
                return False
            self._entered = False
            return self._finish(exc_type, exc, tb)
        finally:
            self._guard.stop()

    def _finish(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc_type is None:
            try:
                next(self._gen)
            except StopIteration:
                return False
            raise RuntimeError("generator didn't stop")
        if exc is None:
            exc = exc_type()
        try:
            self._gen.throw(exc)
        except StopIteration as stop:
            return stop is not exc
        except BaseException as raised:
            if raised is exc:
                return False
            raise
        raise RuntimeError("generator didn't stop after throw()")


def critical_contextmanager(
    fn: Callable[P, Generator[T, None, None]] | Callable[P, Iterator[T]],
) -> Callable[P, contextlib.AbstractContextManager[T]]:
    """Like ``contextlib.contextmanager``, with the code before and after ``yield`` critical.

    The block itself interrupts as usual; the set-up and the tear-down
    (``finally`` after the ``yield``) always run to their end. The
    context manager installs a `guard` for its duration.
    """

    @functools.wraps(fn)
    def make(*args: P.args, **kwargs: P.kwargs) -> contextlib.AbstractContextManager[T]:
        return _CriticalContext(fn(*args, **kwargs))  # type: ignore[arg-type]

    return make
