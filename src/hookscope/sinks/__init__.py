"""Where monitor results go: the run store, JSONL files, TensorBoard, Weights & Biases, MLflow, pandas.

`StoreSink` (the run store, `hookscope.store`), `JsonlSink`, `TensorBoardSink`
(every record), `TensorBoardSummarySink` (a few events a step), `WandbSink`
and `MlflowSink` implement `Sink` (``write(result)``, ``close()``); the
tracker sinks log a per-layer subset (`hookscope.sinks.metrics`) and import
their tracker on first use. `to_frame` builds the tidy frame behind
``Monitor.to_pandas``.
"""

from __future__ import annotations

from hookscope.sinks.base import Sink
from hookscope.sinks.jsonl import JsonlSink, read_jsonl
from hookscope.sinks.mlflow import MlflowSink
from hookscope.sinks.pandas import to_frame
from hookscope.sinks.store import StoreSink
from hookscope.sinks.tensorboard import TensorBoardSink
from hookscope.sinks.tensorboard_summary import TensorBoardSummarySink
from hookscope.sinks.wandb import WandbSink

__all__ = [
    "JsonlSink",
    "MlflowSink",
    "Sink",
    "StoreSink",
    "TensorBoardSink",
    "TensorBoardSummarySink",
    "WandbSink",
    "read_jsonl",
    "to_frame",
]
