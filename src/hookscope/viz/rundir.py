"""Reading a monitor run directory for the report.

Layout (every part optional, at least one needed)::

    RUN_DIR/
      monitor/          the run store (`hookscope.store`): Parquet parts per writer
      monitor.jsonl     or, from older runs, one JSON object per step
      tensorboard/      TensorBoard event files (linked, not read)
      summary.json      hookscope.summary(...).to_dict()
      doctor.json       hookscope.doctor(...).to_dict()
      featuremaps/*.png feature-map grids

Monitor results are read through `hookscope.store` only, in one streaming
pass per writer (`hookscope.viz.digest`): a short run comes back as exact
rows, a long one as per-bin min/max envelopes, so a 100,000-step run reads
in bounded memory. Several writers (torch.distributed ranks, processes
sharing one ``--out``) are all read into ``RunData.writers``; the other
fields describe the first writer (``main`` or rank 0), except ``alerts``
(every writer's, each with its ``writer``) and ``first_nonfinite`` (the
earliest over the writers, with its ``rank``).

A legacy JSONL run that crashed may leave a truncated last line; a bad
line is skipped alone, and the faults are noted once per kind with a
count (`hookscope.store.jsonl`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookscope.errors import UsageError
from hookscope.store import RunStore, open_run
from hookscope.viz.digest import digest_writers
from hookscope.viz.ranks import Writer
from hookscope.viz.records import Row

MONITOR = "monitor"
#: Alerts kept for the report's table (the total is counted).
MAX_ALERTS = 500
SUMMARY = "summary.json"
DOCTOR = "doctor.json"
FEATUREMAPS = "featuremaps"
TENSORBOARD = "tensorboard"
PARTS = (MONITOR, SUMMARY, DOCTOR, FEATUREMAPS, TENSORBOARD)


@dataclass(frozen=True)
class RunData:
    """Everything found in a run directory.

    Attributes:
        path: the run directory.
        steps: number of steps recorded (first writer).
        rows: monitor records, each with its ``step``: exact when ``width`` is 1,
            else one row per series and bin of ``width`` steps, with the bin's
            ``lo``/``hi`` envelope, ``value`` its mean and ``step`` its last step.
        alerts: alert dicts (``step, phase, module, tensor, rule, value``), the
            first `MAX_ALERTS` in order.
        first_nonfinite: the earliest non-null ``first_nonfinite``, or None.
        summary: parsed ``summary.json`` or None.
        doctor: parsed ``doctor.json`` or None.
        featuremaps: PNG files under ``featuremaps/``, sorted.
        tensorboard: the TensorBoard log folder, if present.
        missing: parts of `PARTS` that were absent.
        notes: problems met while reading (skipped lines, bad JSON).
        writers: every writer's monitor file, first writer first (see `hookscope.viz.ranks`).
        width: steps per bin of ``rows`` (1: exact).
        records: records read (first writer).
        last_rows: every record of the last step (first writer), exact.
        alert_total: alerts in the run (``alerts`` holds the first `MAX_ALERTS`).
    """

    path: Path
    steps: int
    rows: tuple[Row, ...]
    alerts: tuple[dict[str, Any], ...]
    first_nonfinite: dict[str, Any] | None
    summary: dict[str, Any] | None
    doctor: dict[str, Any] | None
    featuremaps: tuple[Path, ...]
    tensorboard: Path | None
    missing: tuple[str, ...]
    notes: tuple[str, ...]
    writers: tuple[Writer, ...] = ()
    width: int = 1
    records: int = 0
    last_rows: tuple[Row, ...] = ()
    alert_total: int = 0


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_json(path: Path, notes: list[str]) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        notes.append(f"{path.name} is unreadable ({exc.strerror or type(exc).__name__}); left out")
        return None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError too
        notes.append(f"{path.name} is not valid JSON ({_short(str(exc))}); left out")
        return None
    if not isinstance(value, dict):
        notes.append(f"{path.name} holds a {type(value).__name__}, not an object; left out")
        return None
    return value


def load_run(path: str | Path) -> RunData:
    """Read a run directory (monitor results streamed and, for long runs, downsampled).

    Raises:
        UsageError: ``path`` is not a directory or holds none of the known parts.
    """
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"run directory not found: {str(root)!r}")
    store = open_run(root)
    present = [part for part in PARTS if (root / part).exists() or (part == MONITOR and store)]
    if not present:
        raise UsageError(f"{str(root)!r} holds none of {', '.join(PARTS)}; is it a run directory?")
    notes: list[str] = []
    steps, first, width, records = 0, None, 1, 0
    rows: list[Row] = []
    last_rows: list[Row] = []
    writers: list[Writer] = []
    alerts: list[dict[str, Any]] = []
    alert_total = 0
    if store is not None:
        try:
            digests = digest_writers(store)
        except OSError as exc:
            notes.append(
                f"monitor results unreadable ({exc.strerror or type(exc).__name__}); left out"
            )
            digests = []
        for label, found in zip(store.writers, digests, strict=False):
            file = store.files.get(label, store.path)
            writers.append(Writer(label, file, tuple(found.rows), found.steps))
        if digests:
            steps, rows, width = digests[0].steps, digests[0].rows, digests[0].width
            last_rows, records = digests[0].last_rows, digests[0].records
        alerts, alert_total = _alerts(store, several=len(store.writers) > 1)
        first = store.first_nonfinite()
        notes.extend(store.notes)
    summary = _read_json(root / SUMMARY, notes) if (root / SUMMARY).exists() else None
    doctor = _read_json(root / DOCTOR, notes) if (root / DOCTOR).exists() else None
    maps = (
        tuple(sorted((root / FEATUREMAPS).glob("*.png"))) if (root / FEATUREMAPS).is_dir() else ()
    )
    board = root / TENSORBOARD
    return RunData(
        path=root,
        steps=steps,
        rows=tuple(rows),
        alerts=tuple(alerts),
        first_nonfinite=first,
        summary=summary,
        doctor=doctor,
        featuremaps=maps,
        tensorboard=board if board.is_dir() else None,
        missing=tuple(part for part in PARTS if part not in present),
        notes=tuple(notes),
        writers=tuple(writers),
        width=width,
        records=records,
        last_rows=tuple(last_rows),
        alert_total=alert_total,
    )


def _alerts(store: RunStore, *, several: bool) -> tuple[list[dict[str, Any]], int]:
    """The first `MAX_ALERTS` alerts (each with its ``writer`` when there are several), and the total."""
    shown: list[dict[str, Any]] = []
    total = 0
    for label in store.writers:
        for table in store.scan("alerts", writer=label):
            total += table.num_rows
            room = MAX_ALERTS - len(shown)
            if room > 0:
                for alert in table.slice(0, room).drop_columns(["rank"]).to_pylist():
                    shown.append({**alert, "writer": label} if several else alert)
    return shown, total
