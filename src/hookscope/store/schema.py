"""The Arrow schemas of a run store's tables and how their Parquet files are written.

Records are tidy, one statistic per row, the columns of ``Monitor.to_pandas()``::

    step int64 | phase string | module string | tensor string | stat string | value float64 | rank int32

The string columns repeat every step, so Parquet's dictionary encoding stores
each name once per file and a few bits per row; ``value`` is written with
byte-stream-split encoding, which zstd then compresses well. ``step`` carries
min/max statistics, so a step-range filter skips whole files.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

RECORDS = pa.schema(
    [
        ("step", pa.int64()),
        ("phase", pa.string()),
        ("module", pa.string()),
        ("tensor", pa.string()),
        ("stat", pa.string()),
        ("value", pa.float64()),
        ("rank", pa.int32()),
    ]
)

ALERTS = pa.schema(
    [
        ("step", pa.int64()),
        ("phase", pa.string()),
        ("module", pa.string()),
        ("tensor", pa.string()),
        ("rule", pa.string()),
        ("value", pa.float64()),
        ("rank", pa.int32()),
    ]
)

TENSORS = pa.schema(
    [
        ("step", pa.int64()),
        ("phase", pa.string()),
        ("module", pa.string()),
        ("tensor", pa.string()),
        ("shape", pa.string()),
        ("dtype", pa.string()),
        ("rank", pa.int32()),
    ]
)

SCHEMAS = {"records": RECORDS, "alerts": ALERTS, "tensors": TENSORS}

#: Keyword arguments of ``pyarrow.parquet.write_table`` for every part.
WRITE_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "use_dictionary": ["phase", "module", "tensor", "stat", "rule", "shape", "dtype"],
    "column_encoding": {"value": "BYTE_STREAM_SPLIT", "step": "DELTA_BINARY_PACKED"},
    "write_statistics": ["step"],
    # Row groups of at most 256 Ki rows (~130 steps of 2,000 records): a step
    # range skips most of a merged file, and a reader decodes little at a time.
    "row_group_size": 1 << 18,
}
