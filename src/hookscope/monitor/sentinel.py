"""The sentinel: exact NaN/Inf detection on the steps a Monitor does not record (``every``).

A Monitor with ``every=N`` takes full statistics every N-th step. On the
other steps its hooks still see every monitored tensor — outputs, inputs
that no monitored module made, output and parameter gradients, compiled
graphs' rows — but take only exact NaN/Inf counts
(`hookscope.stats.check_tensor`: one ``sum`` per tensor on CPU). At the
step's end `check_step` looks at them:

* all finite (the usual case): nothing is made, stored or written;
* a NaN or Inf: the step gets a `StepResult` with ``sentinel=True`` whose
  records are the ``nan_count`` and ``inf_count`` of the non-finite tensors,
  the first non-finite tensor (`hookscope.monitor.results.find_nonfinite`,
  the same search a recorded step makes) and the ``nonfinite`` alerts. The
  Monitor hands it to every sink at once, so a run store can flush the
  record a dying run needs.

So ``first_nonfinite`` and the ``nonfinite`` alerts are the same at any
cadence. The magnitude rules (``exploding``, ``vanishing``, ``dead``) need
statistics and run on recorded steps only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from hookscope.monitor.alerts import AlertRules
from hookscope.monitor.entries import Entry
from hookscope.monitor.records import Alert, NonFinite, Phase, TensorInfo
from hookscope.monitor.results import (
    InfoKey,
    Key,
    clean_keys,
    find_nonfinite,
    merge_entries,
    summaries,
)
from hookscope.stats import fetch

#: The statistics a sentinel step reports of a non-finite tensor.
COUNTS = ("nan_count", "inf_count")


@dataclass(frozen=True)
class Found:
    """What a checked step found: the non-finite tensors' counts, the first of them, alerts."""

    found: dict[Key, dict[str, float]]
    tensors: list[TensorInfo]
    first: NonFinite | None
    alerts: list[Alert]


def check_step(
    step: int,
    entries: Sequence[Entry],
    rules: AlertRules,
    *,
    searching: bool,
    names: dict[str, str],
    memo: dict[tuple[Phase, str], str],
    infos: dict[InfoKey, TensorInfo],
) -> Found | None:
    """The non-finite tensors of a checked step, or None when it has nothing to report.

    Args:
        step: the step's number.
        entries: the step's entries in execution order (`Collector.take`).
        rules: the Monitor's alert rules (only ``nonfinite`` is evaluated).
        searching: no first NaN/Inf is known yet: look for it.
        names, memo: clean names and their memo (`hookscope.monitor.results.clean_keys`).
        infos: the Monitor's `TensorInfo` memo (`merge_entries`).
    """
    fetch([entry.red for entry in entries])  # off the CPU: the counts, in one transfer
    bad = [entry for entry in entries if not entry.red.known_finite() and entry.red.nonfinite()]
    if not bad and not rules.watching_nonfinite:
        return None
    merged, tensors = merge_entries(bad, infos)
    first = find_nonfinite(step, bad) if searching else None
    merged, tensors, first = clean_keys(merged, tensors, first, names, memo)
    found = summaries(merged, COUNTS)
    counts = {key: values.get("nan_count", 0.0) + values.get("inf_count", 0.0)
              for key, values in found.items()}  # fmt: skip
    seen: Collection[Key] = found.keys()
    if rules.watching_nonfinite:  # a condition clears where its tensor is finite again
        everything, _ = merge_entries(entries, infos)
        seen = clean_keys(everything, (), None, names, memo)[0].keys()
    alerts = rules.check_nonfinite(step, counts, seen)
    if not bad:
        return None
    return Found(found, tensors, first, alerts)
