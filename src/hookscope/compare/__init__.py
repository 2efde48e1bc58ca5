"""Compare two runs module by module: where they part ways, and which layer did it.

`compare` runs a reference model A and a model B (or reads a recording of
either) on the same inputs and reports, per module call in execution order,
max abs/rel error, SQNR, cosine similarity and the fraction of elements
outside ``rtol``/``atol``. ``mode="isolate"`` feeds each module of B A's
inputs, so `Comparison.culprit` is the module that *introduces* the error.
`record` saves a run to safetensors for a later comparison.

Flow: ``recorder`` (session hooks) → ``recording`` → ``match`` + ``metrics``
(pure) → ``records`` → ``format`` → ``result`` (`Comparison`); the report
draws the JSON form (`hookscope.viz.compare`).
"""

from __future__ import annotations

from hookscope.compare.compiled import CompileFallbackWarning
from hookscope.compare.core import compare, record
from hookscope.compare.metrics import Metrics, tensor_metrics
from hookscope.compare.recording import CallRecord, Recording, load_recording
from hookscope.compare.records import ComparisonData, Row, TensorDiff
from hookscope.compare.result import Comparison

__all__ = [
    "CallRecord",
    "CompileFallbackWarning",
    "Comparison",
    "ComparisonData",
    "Metrics",
    "Recording",
    "Row",
    "TensorDiff",
    "compare",
    "load_recording",
    "record",
    "tensor_metrics",
]
