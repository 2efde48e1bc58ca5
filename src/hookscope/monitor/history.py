"""What a Monitor keeps in memory, bounded whatever the run's length.

* `results`: the last ``history`` recorded steps (a ``deque``), and how many
  left it (`dropped`); sinks receive every step, so nothing is lost on disk.
* `alerts`: the last `ALERTS_KEPT` alerts (alerts fire when a condition
  starts, so a healthy run makes few).
* the first NaN/Inf: of recorded steps (combined across ranks with
  ``ranks="reduce"``) and of checked ones (`hookscope.monitor.sentinel`), kept
  apart so that the collectives of recorded steps depend only on what every
  rank knows; `first_nonfinite` is the earlier of the two.

About 100-200 bytes of memory per statistic kept: 200 steps of a model with
~2,000 statistics a step hold ~40 MB.
"""

from __future__ import annotations

from collections import deque

from hookscope.monitor.records import Alert, NonFinite, StepResult

#: Recorded steps a Monitor keeps in memory by default (``Monitor(history=)``).
DEFAULT_HISTORY = 200
#: Alerts a Monitor keeps in memory (the last ones).
ALERTS_KEPT = 10_000


class History:
    """The bounded in-memory state of one Monitor.

    Args:
        history: recorded steps kept (``None``: all, growing with the run).
    """

    def __init__(self, history: int | None) -> None:
        self.results: deque[StepResult] = deque(maxlen=history)
        #: Recorded steps that left `results`.
        self.dropped = 0
        self.alerts: deque[Alert] = deque(maxlen=ALERTS_KEPT)
        #: The first NaN/Inf of a recorded step.
        self.first: NonFinite | None = None
        #: The first NaN/Inf a checked (unrecorded) step found: this rank's own.
        self.checked_first: NonFinite | None = None

    def add(self, result: StepResult) -> None:
        """Keep ``result``, dropping the oldest beyond ``history``."""
        results = self.results
        if results.maxlen == 0:
            self.dropped += 1
            return
        if len(results) == results.maxlen:
            self.dropped += 1
        results.append(result)

    def first_nonfinite(self) -> NonFinite | None:
        """The first NaN/Inf of recorded steps or of checked ones, whichever came first."""
        recorded, checked = self.first, self.checked_first
        if recorded is None or checked is None:
            return recorded or checked
        return checked if checked.step < recorded.step else recorded
