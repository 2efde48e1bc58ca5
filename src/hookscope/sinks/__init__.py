"""Where monitor results go: JSONL files, TensorBoard, pandas.

`JsonlSink` and `TensorBoardSink` implement `Sink` (``write(result)``,
``close()``); `to_frame` builds the tidy frame behind ``Monitor.to_pandas``.
"""

from __future__ import annotations

from hookscope.sinks.base import Sink
from hookscope.sinks.jsonl import JsonlSink, read_jsonl
from hookscope.sinks.pandas import to_frame
from hookscope.sinks.tensorboard import TensorBoardSink

__all__ = ["JsonlSink", "Sink", "TensorBoardSink", "read_jsonl", "to_frame"]
