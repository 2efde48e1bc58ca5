"""Reading a monitor run directory for the report.

Layout (every part optional, at least one needed)::

    RUN_DIR/
      monitor.jsonl     one JSON object per step: {"step", "records", "alerts", "first_nonfinite"}
      tensorboard/      TensorBoard event files (linked, not read)
      summary.json      hookscope.summary(...).to_dict()
      doctor.json       hookscope.doctor(...).to_dict()
      featuremaps/*.png feature-map grids

Several writers (torch.distributed ranks, processes sharing one ``--out``)
leave one file each, ``monitor.rank<N>.jsonl`` / ``monitor.pid<PID>.jsonl``
(`hookscope.viz.ranks`): all are read into ``RunData.writers``; the other
fields describe the first writer (``monitor.jsonl`` or rank 0), except
``alerts`` (every writer's, each with its ``writer``) and ``first_nonfinite``
(the earliest over the writers, with its ``rank``).

A run that crashed may leave a truncated last line in ``monitor.jsonl``. Each
line is checked whole (an object with an integer ``step``, ``records`` and
``alerts`` lists of objects, ``first_nonfinite`` an object or null, strict
UTF-8, every record a valid monitor record): a bad line is skipped — that
record only, never the rest of the file — and named in ``RunData.notes``. A
leading UTF-8 BOM is read; a ``monitor.jsonl`` that cannot be read (a
directory, no permission) is named as unreadable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookscope.errors import UsageError
from hookscope.viz.ranks import Writer, monitor_files
from hookscope.viz.records import Row, as_rows

MONITOR = "monitor.jsonl"
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
        steps: number of steps in ``monitor.jsonl``.
        rows: monitor records, each with its ``step``.
        alerts: alert dicts (``step, module, tensor, value, rule``) in file order.
        first_nonfinite: the earliest non-null ``first_nonfinite``, or None.
        summary: parsed ``summary.json`` or None.
        doctor: parsed ``doctor.json`` or None.
        featuremaps: PNG files under ``featuremaps/``, sorted.
        tensorboard: the TensorBoard log folder, if present.
        missing: parts of `PARTS` that were absent.
        notes: problems met while reading (skipped lines, bad JSON).
        writers: every writer's monitor file, first writer first (see `hookscope.viz.ranks`).
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


def _entry(line: bytes) -> tuple[int, list[Row], list[dict[str, Any]], dict[str, Any] | None]:
    """One ``monitor.jsonl`` line, checked whole: a bad field rejects the line.

    Raises:
        ValueError: (or a subclass) naming what is wrong with the line.
    """
    entry = json.loads(line.decode("utf-8"))
    if not isinstance(entry, dict):
        raise ValueError(f"a {type(entry).__name__}, not an object")
    step = entry.get("step")
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if isinstance(step, bool) or not isinstance(step, int):
        raise ValueError(f"step is {step!r}, not an integer")
    records = entry.get("records", [])
    alerts = entry.get("alerts") or []
    first = entry.get("first_nonfinite")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError("records is not a list of objects")
    if not isinstance(alerts, list) or not all(isinstance(a, dict) for a in alerts):
        raise ValueError(f"alerts is {_short(alerts)}, not a list of objects")
    if first is not None and not isinstance(first, dict):
        raise ValueError(f"first_nonfinite is {_short(first)}, not an object or null")
    try:
        rows = as_rows({**record, "step": step} for record in records)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    return step, rows, alerts, first or None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_monitor(path: Path, notes: list[str]) -> tuple[int, list[Row], list[dict[str, Any]], Any]:
    steps = 0
    rows: list[Row] = []
    alerts: list[dict[str, Any]] = []
    first = None
    try:
        data = path.read_bytes()
    except OSError as exc:
        notes.append(f"{path.name} is unreadable ({exc.strerror or type(exc).__name__}); left out")
        return 0, [], [], None
    for number, line in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            _, entry_rows, entry_alerts, entry_first = _entry(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError too
            reason = f"{type(exc).__name__}: {exc}"
            notes.append(f"{path.name} line {number} skipped ({_short(reason)[:200]})")
            continue
        steps += 1
        rows.extend(entry_rows)
        alerts.extend(entry_alerts)
        if first is None and entry_first:
            first = entry_first
    return steps, rows, alerts, first


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
    """Read a run directory.

    Raises:
        UsageError: ``path`` is not a directory or holds none of the known parts.
    """
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"run directory not found: {str(root)!r}")
    files = monitor_files(root)
    present = [part for part in PARTS if (root / part).exists() or (part == MONITOR and files)]
    if not present:
        raise UsageError(f"{str(root)!r} holds none of {', '.join(PARTS)}; is it a run directory?")
    notes: list[str] = []
    steps, first = 0, None
    rows: list[Row] = []
    alerts: list[dict[str, Any]] = []
    writers = []
    for label, file in files:
        file_steps, file_rows, file_alerts, file_first = _read_monitor(file, notes)
        writers.append(Writer(label, file, tuple(file_rows), file_steps))
        alerts += (
            [{**alert, "writer": label} for alert in file_alerts] if len(files) > 1 else file_alerts
        )
        if file_first and (first is None or _earlier(file_first, first)):
            first = file_first
    if writers:
        steps, rows = writers[0].steps, list(writers[0].rows)
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
    )


_PHASE_ORDER = {"forward": 0, "backward": 1, "param": 2}


def _earlier(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether first-NaN record ``a`` comes before ``b``: step, then phase, then rank."""

    def order(x: dict[str, Any]) -> tuple[float, int, float]:
        step, rank = x.get("step"), x.get("rank")
        return (
            step if isinstance(step, (int, float)) else float("inf"),
            _PHASE_ORDER.get(str(x.get("phase")), 3),
            rank if isinstance(rank, (int, float)) else float("inf"),
        )

    return order(a) < order(b)
