"""Threshold rules over a step's records: exploding, vanishing, dead, non-finite.

Rules look at one value per tensor and step:

* ``exploding`` — activation ``absmax`` or gradient ``norm`` above
  ``explode_above``, or above ``explode_jump`` times the median of its last
  `Thresholds.window` finite values (once at least `Thresholds.min_history`
  exist);
* ``vanishing`` — gradient ``norm`` below ``vanish_below`` for
  ``vanish_steps`` recorded steps in a row;
* ``dead`` — ``zero_frac`` of a post-activation module's output at or above
  ``dead_above`` (zero fraction is only computed for activation modules by
  default);
* ``nonfinite`` — any NaN or Inf (value: their count).

An alert fires when its condition starts and again only after the condition
has cleared, so a NaN that persists for 1000 steps gives one alert, not 1000.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from hookscope.errors import UsageError
from hookscope.monitor.records import Alert, Phase, Record, Rule

_Key = tuple[Phase, str, str]


@dataclass(frozen=True)
class Thresholds:
    """Alert thresholds (see the module docstring for each rule)."""

    explode_above: float = 1e4
    explode_jump: float = 10.0
    vanish_below: float = 1e-7
    vanish_steps: int = 3
    dead_above: float = 0.99
    window: int = 20
    min_history: int = 5

    def __post_init__(self) -> None:
        for name in ("explode_above", "explode_jump", "vanish_below", "dead_above"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise UsageError(f"{name} must be a number >= 0, got {value!r}")
        for name in ("vanish_steps", "window", "min_history"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be an int >= 1, got {value!r}")


class AlertRules:
    """Evaluates `Thresholds` step after step; keeps the history the rules need."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.thresholds = thresholds
        self._history: dict[_Key, _Window] = {}
        self._low_streak: dict[_Key, int] = {}
        self._active: set[tuple[_Key, Rule]] = set()

    def check(self, step: int, records: Iterable[Record]) -> list[Alert]:
        """The alerts that start at ``step``."""
        found: dict[_Key, dict[str, float]] = {}
        for rec in records:
            found.setdefault((rec.phase, rec.module, rec.tensor), {})[rec.stat] = rec.value
        return self.check_found(step, found)

    def check_found(self, step: int, found: Mapping[_Key, Mapping[str, float]]) -> list[Alert]:
        """`check` of a step's statistics as ``{(phase, module, tensor): {stat: value}}``.

        The Monitor has them so (`hookscope.monitor.results.summaries`): one
        look-up per tensor instead of one comparison per record.
        """
        conditions: dict[tuple[_Key, Rule], float] = {}
        nonfinite: dict[_Key, float] = {}
        dead_above = self.thresholds.dead_above
        for key, values in found.items():
            forward = key[0] == "forward"
            count = values.get("nan_count", 0.0) + values.get("inf_count", 0.0)
            if count > 0:
                nonfinite[key] = count
            magnitude = values.get("absmax" if forward else "norm")  # magnitudes watched
            # finite only (x - x is NaN for NaN and Inf): the nonfinite rule covers the others
            if magnitude is not None and magnitude - magnitude == 0:
                self._magnitude(key, magnitude, forward, conditions)
            dead = values.get("zero_frac") if forward else None
            if dead is not None and dead >= dead_above:
                conditions[(key, "dead")] = dead
        for key, count in nonfinite.items():  # after the others, as they always came
            conditions[(key, "nonfinite")] = count
        return self._edges(step, conditions, seen=found.keys())

    @property
    def watching_nonfinite(self) -> bool:
        """True while a ``nonfinite`` condition is active (it clears when its tensor is finite)."""
        return any(rule == "nonfinite" for _, rule in self._active)

    def check_nonfinite(
        self, step: int, counts: Mapping[_Key, float], seen: Collection[_Key]
    ) -> list[Alert]:
        """The ``nonfinite`` rule alone, for a step checked but not recorded (``every``).

        Args:
            step: the step.
            counts: NaN + Inf count of each non-finite tensor.
            seen: every tensor checked in the step: a ``nonfinite`` condition
                clears when its tensor was seen finite. The other rules' conditions
                stay as they are (they need statistics this step did not take).
        """
        rule: Rule = "nonfinite"
        conditions = {(key, rule): count for key, count in counts.items() if count > 0}
        alerts = []
        for item, value in conditions.items():
            if item not in self._active:
                self._active.add(item)
                key = item[0]
                alerts.append(Alert(step, key[1], key[2], value, rule, key[0]))
        self._active = {
            item
            for item in self._active
            if item[1] != "nonfinite" or item in conditions or item[0] not in seen
        }
        return alerts

    def _magnitude(
        self, key: _Key, value: float, forward: bool, conditions: dict[tuple[_Key, Rule], float]
    ) -> None:
        """The exploding and vanishing rules for one finite magnitude."""
        th = self.thresholds
        history = self._history.get(key)
        if history is None:
            history = self._history[key] = _Window(th.window)
        median = history.push(value, th.min_history)
        jump = median is not None and median > 0 and value > th.explode_jump * median
        if value > th.explode_above or jump:
            conditions[(key, "exploding")] = value
        if not forward:
            streak = self._low_streak.get(key, 0) + 1 if value < th.vanish_below else 0
            self._low_streak[key] = streak
            if streak >= th.vanish_steps:
                conditions[(key, "vanishing")] = value

    def _edges(
        self, step: int, conditions: dict[tuple[_Key, Rule], float], seen: Collection[_Key]
    ) -> list[Alert]:
        alerts = []
        for (key, rule), value in conditions.items():
            if (key, rule) not in self._active:
                self._active.add((key, rule))
                phase, module, tensor = key
                alerts.append(Alert(step, module, tensor, value, rule, phase))
        # A condition clears only when its tensor was seen this step without it.
        self._active = {item for item in self._active if item in conditions or item[0] not in seen}
        return alerts


class _Window:
    """The last ``size`` finite values of one tensor, also kept sorted for their median.

    Keeping them sorted costs a ``bisect`` per step instead of a sort of the
    window per step (a Monitor checks every tensor every step).
    """

    __slots__ = ("order", "ranked")

    def __init__(self, size: int) -> None:
        self.order: deque[float] = deque(maxlen=size)
        self.ranked: list[float] = []

    def push(self, value: float, min_history: int) -> float | None:
        """Add ``value``; the `statistics.median` of the window before it, None below ``min_history``."""
        order, ranked = self.order, self.ranked
        n = len(ranked)
        median = None
        if n >= min_history:
            mid = n // 2
            median = ranked[mid] if n % 2 else (ranked[mid - 1] + ranked[mid]) / 2
        if n == order.maxlen:
            del ranked[bisect_left(ranked, order[0])]
        order.append(value)
        insort(ranked, value)
        return median
