"""JSON Lines sink: one strict-JSON object per recorded step, flushed each step.

Line format (the contract the report and pictures code reads)::

    {"step": 3,
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
  stays set on later lines once found), so the last line always has it.

Non-finite floats are written as the strings ``"nan"``, ``"inf"`` and
``"-inf"`` so every line is strict JSON; `read_jsonl` turns them back into
floats in ``value`` fields. Each line is written with one ``write`` call and
flushed, so after a crash (even SIGKILL) every complete line is valid.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from hookscope.errors import UsageError
from hookscope.monitor.records import StepResult


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
        }
        for t in result.tensors
    ]
    line = {
        "step": result.step,
        "records": records,
        "alerts": alerts,
        "first_nonfinite": origin,
        "tensors": tensors,
    }
    return json.dumps(line, allow_nan=False, separators=(",", ":"))


class JsonlSink:
    """Append one JSON line per recorded step to ``path`` (created, with parents).

    Args:
        path: the ``.jsonl`` file; an existing file is truncated unless ``append``.
        append: keep existing lines.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise UsageError(f"JsonlSink needs a file path, got a directory: {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self.path.open("a" if append else "w", encoding="utf-8")

    def write(self, result: StepResult) -> None:
        """Write and flush one line."""
        if self._file is None:
            raise UsageError(f"JsonlSink({self.path}) is closed")
        self._file.write(encode(result) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None


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
