"""Reading legacy ``monitor.jsonl`` files as record batches, in bounded memory.

One JSON object per line (`hookscope.sinks.jsonl`). Lines are read in
chunks: a line longer than `MAX_LINE` bytes is skipped without being held
in memory, and a bad line (not JSON, not UTF-8, wrong fields, a truncated
last line of a killed run) is skipped alone. Faults are counted per kind,
so a file of garbage gives one note per kind of fault with its count and
the first line it happened on, never one note per line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa

from hookscope.store.schema import ALERTS, RECORDS

#: Lines longer than this (bytes) are skipped unread.
MAX_LINE = 64 * 1024 * 1024
#: Steps per record batch.
BATCH_STEPS = 256
_CHUNK = 1 << 20
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "+inf": math.inf}


class Faults:
    """Skipped lines of one file, counted per kind of fault."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.kinds: dict[str, tuple[int, int, str]] = {}  # kind -> (count, first line, example)

    def add(self, kind: str, line: int, detail: str) -> None:
        count, first, example = self.kinds.get(kind, (0, line, detail))
        self.kinds[kind] = (count + 1, first, example)

    def notes(self) -> list[str]:
        """One note per kind of fault: how many lines, the first one, an example."""
        out = []
        for kind, (count, first, example) in self.kinds.items():
            lines = "1 line" if count == 1 else f"{count} lines"
            out.append(
                f"{self.name}: {lines} skipped ({kind}; first at line {first}: {example[:120]})"
            )
        return out


def lines(file: BinaryIO, faults: Faults) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` for each line of ``file``; over-long lines are counted and skipped."""
    number, buffer, skipping = 0, b"", False
    while chunk := file.read(_CHUNK):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE:
                        buffer, skipping = b"", True
                break
            number += 1
            if skipping:
                faults.add("line too long", number, f"over {MAX_LINE} bytes")
                skipping = False
            else:
                yield number, buffer + chunk[start:end]
            buffer, start = b"", end + 1
    if skipping:
        faults.add("line too long", number + 1, f"over {MAX_LINE} bytes")
    elif buffer.strip():
        yield number + 1, buffer


def _value(value: Any) -> float:
    if isinstance(value, str):
        return _NONFINITE[value.strip().lower()]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"value is {value!r}")
    return float(value)


def _entry(line: bytes) -> tuple[int, list[tuple[str, str, str, str, float]], list[Any], Any]:
    """One line checked whole. Raises ValueError / TypeError / KeyError naming the fault."""
    entry = json.loads(line.decode("utf-8"))
    if not isinstance(entry, dict):
        raise TypeError(f"a {type(entry).__name__}, not an object")
    step = entry.get("step")
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"step is {str(step)[:40]!r}, not an integer")
    records = entry.get("records", [])
    alerts = entry.get("alerts") or []
    first = entry.get("first_nonfinite")
    if not isinstance(records, list) or not isinstance(alerts, list):
        raise TypeError("records or alerts is not a list")
    if first is not None and not isinstance(first, dict):
        raise TypeError("first_nonfinite is not an object or null")
    rows = [
        (
            str(r["phase"]),
            str(r["module"]),
            str(r.get("tensor", "")),
            str(r["stat"]),
            _value(r["value"]),
        )
        for r in records
    ]
    for alert in alerts:
        if not isinstance(alert, dict):
            raise TypeError("an alert is not an object")
    return step, rows, alerts, first


def _kind(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return "not JSON"
    if isinstance(exc, RecursionError):
        return "nested too deep"
    return "not a monitor step"


class JsonlFile:
    """One writer's legacy JSONL file, read as record batches (`RECORDS` schema).

    After a full `batches` pass, ``alerts``, ``first_nonfinite``, ``steps``
    and ``faults`` describe the whole file.
    """

    def __init__(self, path: Path, rank: int = 0) -> None:
        self.path = path
        self.rank = rank
        self.faults = Faults(path.name)
        self.alerts: list[dict[str, Any]] = []
        self.first_nonfinite: dict[str, Any] | None = None
        self.steps = 0
        self.scanned = False
        self.meta: dict[str, Any] = {}

    def batches(self) -> Iterator[pa.Table]:
        """The records, `BATCH_STEPS` steps per table."""
        self.faults = Faults(self.path.name)
        self.alerts, self.first_nonfinite, self.steps = [], None, 0
        columns: list[list[Any]] = [[] for _ in range(6)]
        steps_in_batch = 0
        with self.path.open("rb") as file:
            for number, line in lines(file, self.faults):
                if not line.strip():
                    continue
                try:
                    step, rows, alerts, first = _entry(line.removeprefix(b"\xef\xbb\xbf"))
                except (ValueError, TypeError, KeyError, RecursionError) as exc:
                    self.faults.add(_kind(exc), number, f"{type(exc).__name__}: {exc}")
                    continue
                self.steps += 1
                self._note(step, alerts, first)
                for row in rows:
                    columns[0].append(step)
                    for index, item in enumerate(row, start=1):
                        columns[index].append(item)
                steps_in_batch += 1
                if steps_in_batch >= BATCH_STEPS:
                    yield self._table(columns)
                    columns, steps_in_batch = [[] for _ in range(6)], 0
        if columns[0]:
            yield self._table(columns)
        self.scanned = True

    def _note(self, step: int, alerts: list[Any], first: Any) -> None:
        if not self.meta:
            self.meta = {"writer": "main", "rank": self.rank, "format": "jsonl"}
        self.alerts.extend({**a, "step": a.get("step", step)} for a in alerts)
        if self.first_nonfinite is None and first:
            self.first_nonfinite = first

    def _table(self, columns: list[list[Any]]) -> pa.Table:
        arrays: list[Any] = [pa.array(columns[0], pa.int64()), *columns[1:5]]
        arrays.append(pa.array(columns[5], pa.float64()))
        arrays.append(pa.array([self.rank] * len(columns[0]), pa.int32()))
        return pa.Table.from_arrays(arrays, schema=RECORDS)

    def alerts_table(self) -> pa.Table:
        """The alerts as an `ALERTS` table (scans the file if not done yet)."""
        if not self.scanned:
            for _ in self.batches():
                pass
        cols: list[list[Any]] = [[] for _ in range(6)]
        for a in self.alerts:
            try:
                value = _value(a.get("value", math.nan))
            except (TypeError, KeyError):
                value = math.nan
            for index, key in enumerate(("step", "phase", "module", "tensor", "rule")):
                default: Any = 0 if key == "step" else ""
                item = a.get(key, default)
                cols[index].append(
                    item
                    if key == "step" and isinstance(item, int)
                    else (str(item) if key != "step" else 0)
                )
            cols[5].append(value)
        arrays: list[Any] = [
            pa.array(cols[0], pa.int64()),
            *cols[1:5],
            pa.array(cols[5], pa.float64()),
        ]
        arrays.append(pa.array([self.rank] * len(cols[0]), pa.int32()))
        return pa.Table.from_arrays(arrays, schema=ALERTS)
