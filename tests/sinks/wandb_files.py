"""Reading a W&B offline run back from its ``run-<id>.wandb`` file, with wandb's own protobuf.

The file is a log of W&B ``Record`` messages: a 7-byte header (``:W&B``, a
magic number, a version), then 32 KiB blocks of chunks, each with a 7-byte
header (CRC32, length, type: 1 full, 2 first, 3 middle, 4 last).
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> list[Any]:
    """Every ``wandb_internal_pb2.Record`` in the file, in order."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    found, pending, pos = [], b"", HEADER
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # the rest of a block is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 or pos + HEADER + length > len(data):  # the end, or still being written
            break
        pending += data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pending)
            found.append(record)
            pending = b""
    return found


def run_file(wandb_dir: Path, timeout: float = 60.0) -> Path:
    """The one offline run's ``.wandb`` file under ``wandb_dir``, once complete.

    wandb's service process may still be writing it when ``run.finish()``
    returns; the file is complete when its last record is the ``exit`` record.
    """
    (path,) = wandb_dir.glob("wandb/offline-run-*/run-*.wandb")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = records(path)
        if found and found[-1].WhichOneof("record_type") == "exit":
            return path
        time.sleep(0.1)
    raise AssertionError(f"{path} has no exit record after {timeout} s")


def _key(item: Any) -> str:
    return str(item.key or "/".join(item.nested_key))


def history(path: Path) -> list[dict[str, Any]]:
    """The logged rows (``run.log`` calls), values decoded from JSON (``NaN`` included)."""
    rows = []
    for record in records(path):
        if record.WhichOneof("record_type") == "history":
            rows.append({_key(i): json.loads(i.value_json) for i in record.history.item})
    return rows


def summary(path: Path) -> dict[str, Any]:
    """The run summary as last updated."""
    found: dict[str, Any] = {}
    for record in records(path):
        if record.WhichOneof("record_type") == "summary":
            found.update({_key(i): json.loads(i.value_json) for i in record.summary.update})
    return found
