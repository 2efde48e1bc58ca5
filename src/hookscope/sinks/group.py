"""Writing to several sinks where one may fail: the monitor's ``on_error`` decides."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from hookscope.errors import HookscopeWarning

if TYPE_CHECKING:
    from hookscope.monitor.records import StepResult
    from hookscope.sinks.base import Sink


class SinkGroup:
    """The sinks of one monitor; a failing sink follows the monitor's ``on_error``.

    With ``"raise"`` the sink's exception propagates. With ``"warn"`` or
    ``"disable"`` a sink that raises in ``write`` or ``close`` (disk full,
    a closed pipe, a bug in a user's sink) is warned about once, dropped
    (later steps skip it; it is still closed at the end) and the other sinks
    and the training go on.
    """

    def __init__(
        self, sinks: Sequence[Sink], on_error: Literal["raise", "warn", "disable"]
    ) -> None:
        self.sinks = list(sinks)
        self.on_error = on_error
        self.failed: list[tuple[Sink, BaseException]] = []

    def write(self, result: StepResult) -> None:
        """Hand ``result`` to every working sink."""
        for sink in list(self.sinks):
            try:
                sink.write(result)
            except Exception as exc:
                self._failed(sink, exc, "write")

    def close(self) -> None:
        """Close every sink, the failed ones too."""
        for sink in [*self.sinks, *(sink for sink, _ in self.failed)]:
            try:
                sink.close()
            except Exception as exc:
                if sink in self.sinks:
                    self._failed(sink, exc, "close")

    def _failed(self, sink: Sink, exc: Exception, what: str) -> None:
        if self.on_error == "raise":
            raise exc
        self.sinks.remove(sink)
        self.failed.append((sink, exc))
        warnings.warn(
            f"hookscope Monitor: sink {sink!r} failed in {what}() ({type(exc).__name__}: {exc}); "
            "it is disabled, the other sinks and the run go on",
            HookscopeWarning,
            stacklevel=4,
        )
