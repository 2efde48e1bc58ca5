"""Where monitor results go: JSONL files, TensorBoard, Weights & Biases, MLflow, pandas.

`JsonlSink`, `TensorBoardSink`, `WandbSink` and `MlflowSink` implement `Sink`
(``write(result)``, ``close()``); the tracker sinks log a per-layer subset
(`hookscope.sinks.metrics`) and import their tracker on first use. `to_frame`
builds the tidy frame behind ``Monitor.to_pandas``.
"""

from __future__ import annotations

from hookscope.sinks.base import Sink
from hookscope.sinks.jsonl import JsonlSink, read_jsonl
from hookscope.sinks.mlflow import MlflowSink
from hookscope.sinks.pandas import to_frame
from hookscope.sinks.tensorboard import TensorBoardSink
from hookscope.sinks.wandb import WandbSink

__all__ = [
    "JsonlSink",
    "MlflowSink",
    "Sink",
    "TensorBoardSink",
    "WandbSink",
    "read_jsonl",
    "to_frame",
]
