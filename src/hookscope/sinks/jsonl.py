"""JSON Lines sink: one strict-JSON object per recorded step, flushed each step.

Line format (the contract the report and pictures code reads)::

    {"step": 3, "rank": 0, "world_size": 1, "ranks": "local",
     "records": [{"phase": "forward", "module": "features.0", "tensor": "output",
                  "stat": "mean", "value": 0.12}, ...],
     "alerts": [{"step": 3, "module": "...", "tensor": "...", "value": 1e5,
                 "rule": "exploding", "phase": "backward"}, ...],
     "first_nonfinite": null | {"step", "phase", "module", "tensor"},
     "tensors": [{"phase", "module", "tensor", "shape": [8, 16], "dtype": "float32"}, ...]}

Deviations from / additions to the agreed format, all additive:

* alerts carry a sixth key ``phase`` (a module has forward and backward
  tensors with the same path);
* ``tensors`` lists shape and dtype of every reported tensor;
* ``first_nonfinite`` is the monitor's first non-finite record so far (it
  stays set on later lines once found), so the last line always has it; it
  carries the ``rank`` that saw it;
* ``rank``, ``world_size`` and ``ranks`` (``"local"`` or ``"reduce"``) say
  where the line's records were taken (torch.distributed).

One writer per file (see `JsonlSink`): under torch.distributed each rank
writes its own file (``monitor.rank1.jsonl``); a process that finds the file
locked by another live process writes ``monitor.pid<PID>.jsonl`` beside it;
a process forked from the writer writes nothing.

Non-finite floats are written as the strings ``"nan"``, ``"inf"`` and
``"-inf"`` so every line is strict JSON; `read_jsonl` turns them back into
floats in ``value`` fields. Each line is written with one ``write`` call and
flushed, so after a crash (even SIGKILL) every complete line is valid.
"""

from __future__ import annotations

import json
import math
import os
import threading
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from hookscope import dist
from hookscope.errors import HookscopeWarning, UsageError
from hookscope.monitor.records import StepResult
from hookscope.store.locks import try_lock


def _number(value: float) -> float | str:
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "nan"
    return "inf" if value > 0 else "-inf"


def encode(result: StepResult) -> str:
    """One JSON line (without the newline) for ``result``."""
    records = [
        {
            "phase": r.phase,
            "module": r.module,
            "tensor": r.tensor,
            "stat": r.stat,
            "value": _number(r.value),
        }
        for r in result.records
    ]
    alerts = [
        {
            "step": a.step,
            "module": a.module,
            "tensor": a.tensor,
            "value": _number(a.value),
            "rule": a.rule,
            "phase": a.phase,
        }
        for a in result.alerts
    ]
    origin = None if result.first_nonfinite is None else asdict(result.first_nonfinite)
    tensors = [
        {
            "phase": t.phase,
            "module": t.module,
            "tensor": t.tensor,
            "shape": list(t.shape),
            "dtype": t.dtype,
            **({"note": t.note} if t.note else {}),  # empty, or complex (|z|)
        }
        for t in result.tensors
    ]
    line = {
        "step": result.step,
        "rank": result.rank,
        "world_size": result.world_size,
        "ranks": result.ranks,
        "records": records,
        "alerts": alerts,
        "first_nonfinite": origin,
        "tensors": tensors,
    }
    return json.dumps(line, allow_nan=False, separators=(",", ":"))


class JsonlSink:
    """Append one JSON line per recorded step to ``path`` (created, with parents).

    One writer per file: under torch.distributed with several ranks the file
    is the rank's own (``monitor.jsonl`` -> ``monitor.rank1.jsonl``, see
    `hookscope.dist.rank_file`); the file is locked while open, and a second
    process that finds it locked writes ``<stem>.pid<PID>.jsonl`` beside it
    (with a warning); a child forked after the sink opened writes nothing.
    ``path`` is the file actually written. Writes from several threads are
    serialised.

    Args:
        path: the ``.jsonl`` file; an existing file is truncated unless ``append``.
        append: keep existing lines.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = dist.rank_file(path)
        if self.path.is_dir():
            raise UsageError(f"JsonlSink needs a file path, got a directory: {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self._open_locked(append)
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _open_locked(self, append: bool) -> IO[str]:
        file = self.path.open("a", encoding="utf-8")
        if not try_lock(file):
            file.close()
            taken, self.path = (
                self.path,
                self.path.with_name(f"{self.path.stem}.pid{os.getpid()}{self.path.suffix}"),
            )
            warnings.warn(
                f"{taken} is being written by another process; writing {self.path} instead",
                HookscopeWarning,
                stacklevel=3,
            )
            file = self.path.open("a", encoding="utf-8")
            try_lock(file)
        if not append and self.path.is_file():  # not a device such as /dev/full
            file.truncate(0)
        return file

    def write(self, result: StepResult) -> None:
        """Write and flush one line (nothing in a process forked from the writer)."""
        if self._file is None:
            raise UsageError(f"JsonlSink({self.path}) is closed")
        if os.getpid() != self._pid:
            return
        line = encode(result) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        """Close the file (idempotent; a forked child only drops its copy)."""
        if self._file is not None:
            file, self._file = self._file, None
            if os.getpid() == self._pid:
                file.close()


_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _decode_values(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            key: _NONFINITE.get(value, value)
            if key == "value" and isinstance(value, str)
            else _decode_values(value)
            for key, value in obj.items()
        }
    if isinstance(obj, list):
        return [_decode_values(item) for item in obj]
    return obj


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a monitor JSONL file; a truncated last line (a killed run) is skipped.

    ``"nan"``, ``"inf"`` and ``"-inf"`` in ``value`` fields come back as floats.

    Raises:
        UsageError: the file is missing, or a line other than the last is not JSON.
    """
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"no such monitor file: {file}")
    lines = file.read_text(encoding="utf-8").splitlines()
    rows = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(_decode_values(json.loads(line)))
        except json.JSONDecodeError as exc:
            if index == len(lines) - 1:
                break  # the writer was killed mid-line
            raise UsageError(f"{file}:{index + 1}: not valid JSON ({exc})") from exc
    return rows
