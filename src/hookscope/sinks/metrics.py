"""Which records of a step an experiment tracker gets, and under which metric names.

A tracker draws one chart per metric, so the tracker sinks
(`hookscope.sinks.WandbSink`, `hookscope.sinks.MlflowSink`) log a per-layer
subset by default (`DEFAULT_STATS`): the spread, largest value and dead
fraction of each activation, the gradient norm of each module output and
parameter, and the parameters' update ratio. A metric's value is the
record's value, unchanged (the JSONL sink has the same numbers).

Names are ``PREFIX + PHASE/MODULE/TENSOR/STAT``
(``hookscope/forward/layer1.0.conv1/output/std``), with the characters
MLflow refuses replaced: ``output[0]`` becomes ``output.0``, the root module
is ``_root``. Per step the sinks also log ``PREFIX + alerts`` (the step's
alert count) and ``PREFIX + step``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal

from hookscope.errors import UsageError
from hookscope.monitor.records import NonFinite, Record, StepResult
from hookscope.stats import ALL_STATS, GRAD_STATS

#: Statistics logged per phase when ``stats`` is not given.
DEFAULT_STATS: Mapping[str, tuple[str, ...]] = {
    "forward": ("std", "absmax", "zero_frac"),
    "backward": ("norm",),
    "param": ("norm", "update_ratio"),
}
#: What each phase can report (see `hookscope.Monitor`).
KNOWN_STATS: Mapping[str, tuple[str, ...]] = {
    "forward": tuple(ALL_STATS),
    "backward": GRAD_STATS,
    "param": (*GRAD_STATS, "update_ratio"),
}
#: ``None`` (`DEFAULT_STATS`), ``"all"``, stat names for every phase, or ``{phase: stat names}``.
StatsOption = Literal["all"] | Sequence[str] | Mapping[str, Sequence[str]] | None

_BAD_CHARS = re.compile(r"[^\w\-./ :]")


def _check_stats(stats: StatsOption) -> dict[str, frozenset[str]] | None:
    """``{phase: stats}`` to keep, or None for every record; raises `UsageError` on a bad value."""
    if stats == "all":
        return None
    if stats is None:
        chosen: Mapping[str, Sequence[str]] = DEFAULT_STATS
    elif isinstance(stats, Mapping):
        unknown = [phase for phase in stats if phase not in KNOWN_STATS]
        if unknown:
            raise UsageError(f"stats: unknown phase(s) {unknown!r}; use {list(KNOWN_STATS)}")
        chosen = stats
    elif isinstance(stats, str):
        raise UsageError(f"stats must be 'all', a list of stat names or a dict, got {stats!r}")
    else:
        names = list(stats)
        chosen = {phase: [s for s in names if s in known] for phase, known in KNOWN_STATS.items()}
        unknown = [s for s in names if not any(s in known for known in KNOWN_STATS.values())]
        if unknown:
            raise UsageError(f"stats: unknown stat(s) {unknown!r}; known: {_known()}")
    for phase, kept in chosen.items():
        if isinstance(kept, str) or not all(s in KNOWN_STATS[phase] for s in kept):
            raise UsageError(
                f"stats[{phase!r}] must be a list of {', '.join(KNOWN_STATS[phase])}, got {kept!r}"
            )
    return {phase: frozenset(kept) for phase, kept in chosen.items()}


def _known() -> str:
    return ", ".join(dict.fromkeys(s for known in KNOWN_STATS.values() for s in known))


def _check_modules(modules: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if modules is None:
        return None
    patterns = (modules,) if isinstance(modules, str) else tuple(modules)
    if not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise UsageError(f"modules must be glob pattern(s) such as 'layer1.*', got {modules!r}")
    return patterns


def metric_name(prefix: str, record: Record) -> str:
    """The metric name of ``record`` (see the module docstring)."""
    tensor = record.tensor.replace("[", ".").replace("]", "")
    name = f"{prefix}{record.phase}/{record.module or '_root'}/{tensor}/{record.stat}"
    return _BAD_CHARS.sub("_", name)


def nonfinite_text(first: NonFinite) -> str:
    """``"step 12: features.3 (forward, output)"``: where the first NaN/Inf appeared."""
    return f"step {first.step}: {first.module or '(root)'} ({first.phase}, {first.tensor})"


@dataclass
class MetricSelection:
    """The records a tracker sink logs and their names (options checked once, here).

    Args:
        stats: ``None`` (`DEFAULT_STATS`), ``"all"``, stat names kept in every
            phase (``["std", "norm"]``) or ``{phase: stat names}``.
        modules: glob pattern(s) of module (and parameter) names to keep,
            e.g. ``"layer4.*"``; None keeps every module.
        prefix: put before every metric name (``"hookscope/"``).

    Raises:
        UsageError: an unknown phase or statistic, or a pattern that is not a string.
    """

    stats: StatsOption = None
    modules: str | Sequence[str] | None = None
    prefix: str = "hookscope/"
    _stats: dict[str, frozenset[str]] | None = field(init=False, repr=False)
    _patterns: tuple[str, ...] | None = field(init=False, repr=False)
    #: ``(phase, module, tensor, stat) -> name or None (left out)``: the same records every step.
    _names: dict[tuple[str, str, str, str], str | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._stats = _check_stats(self.stats)
        self._patterns = _check_modules(self.modules)
        if not isinstance(self.prefix, str):
            raise UsageError(f"prefix must be a string, got {self.prefix!r}")
        self._names = {}

    def _name(self, record: Record) -> str | None:
        key = (record.phase, record.module, record.tensor, record.stat)
        if key in self._names:
            return self._names[key]
        keep = self._stats is None or record.stat in self._stats.get(record.phase, ())
        if keep and self._patterns is not None:
            keep = any(fnmatchcase(record.module, p) for p in self._patterns)
        name = metric_name(self.prefix, record) if keep else None
        self._names[key] = name
        return name

    def metrics(self, result: StepResult) -> dict[str, float]:
        """``{metric name: value}`` of the kept records, then the step's alert count."""
        found = {}
        for record in result.records:
            name = self._name(record)
            if name is not None:
                found[name] = record.value
        found[f"{self.prefix}alerts"] = float(len(result.alerts))
        return found
