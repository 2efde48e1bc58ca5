"""A step result whose cross-rank statistics are still on their way (``ranks="reduce"``).

`Monitor.step` starts the step's all-reduces and returns a `DeferredResult`
at once; its ``records``, ``alerts`` and ``first_nonfinite`` are completed the
first time one of them is read, or by the monitor at its next ``step()`` or
``close()`` — whichever comes first, exactly once. Until then the collectives
run while the training goes on. Completing only waits for collectives
already started (`hookscope.monitor.ranks.Exchange.finish`), so reading a
result on some ranks only never desynchronises the process group.

Everything else (``step``, ``tensors``, ``rank``, ``world_size``, ``ranks``,
``missing``) is known when ``step()`` returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookscope.monitor.records import StepResult

#: The fields that wait for the collectives.
_LATE = ("records", "alerts", "first_nonfinite")


class DeferredResult(StepResult):
    """A `StepResult` completed on first read of ``records``, ``alerts`` or ``first_nonfinite``.

    If completing fails (a `hookscope.errors.DistributedError`: the other
    ranks never came), every later read raises that error again.
    """

    @classmethod
    def pending(
        cls,
        complete: Callable[[], StepResult],
        publish: Callable[[StepResult], None],
        **known: Any,
    ) -> DeferredResult:
        """A result with the ``known`` fields.

        Args:
            complete: gives the whole result (called once, by `settle`).
            publish: then receives this result, completed (the monitor keeps
                it and hands it to the sinks).
            **known: the fields known now.
        """
        result = object.__new__(cls)
        for name, value in known.items():
            object.__setattr__(result, name, value)
        object.__setattr__(result, "_complete", complete)
        object.__setattr__(result, "_publish", publish)
        return result

    @property
    def settled(self) -> bool:
        """True once completed (reading ``records`` no longer waits), or failed."""
        return "_complete" not in self.__dict__

    @property
    def failed(self) -> bool:
        """True when completing it raised (the error was raised to whoever read it)."""
        return "_error" in self.__dict__

    @property
    def error(self) -> BaseException | None:
        """What completing it raised, or None."""
        error: BaseException | None = self.__dict__.get("_error")
        return error

    def settle(self) -> None:
        """Complete the result now (waits for the collectives; idempotent)."""
        error = self.__dict__.get("_error")
        if error is not None:
            raise error
        complete = self.__dict__.pop("_complete", None)
        if complete is None:
            return
        try:
            done = complete()
        except BaseException as exc:
            object.__setattr__(self, "_error", exc)
            raise
        for name in _LATE:
            object.__setattr__(self, name, getattr(done, name))
        self.__dict__.pop("_publish")(self)

    def __getattr__(self, name: str) -> Any:
        # Python calls this only for attributes not set: the late fields before `settle`.
        if name in _LATE:
            self.settle()
            return self.__dict__[name]
        raise AttributeError(name)

    def __reduce__(self) -> tuple[Any, ...]:
        self.settle()
        return StepResult, tuple(getattr(self, f) for f in self.__dataclass_fields__)
