"""Where monitor results go: the run store, JSONL files, TensorBoard, pandas.

`StoreSink` (the run store, `hookscope.store`), `JsonlSink`, `TensorBoardSink`
(every record) and `TensorBoardSummarySink` (a few events a step) implement
`Sink` (``write(result)``, ``close()``); `to_frame` builds the tidy frame
behind ``Monitor.to_pandas``.
"""

from __future__ import annotations

from hookscope.sinks.base import Sink
from hookscope.sinks.jsonl import JsonlSink, read_jsonl
from hookscope.sinks.pandas import to_frame
from hookscope.sinks.store import StoreSink
from hookscope.sinks.tensorboard import TensorBoardSink
from hookscope.sinks.tensorboard_summary import TensorBoardSummarySink

__all__ = [
    "JsonlSink",
    "Sink",
    "StoreSink",
    "TensorBoardSink",
    "TensorBoardSummarySink",
    "read_jsonl",
    "to_frame",
]
