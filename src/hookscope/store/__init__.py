"""The run store: where Monitor results live on disk, and the one place that reads them back.

Writer (`StoreWriter`, used through `hookscope.sinks.StoreSink`) and reader
(`open_run`, `read_run`) of a folder of Parquet files per monitored model;
the layout is in `hookscope.store.layout`, the schemas in
`hookscope.store.schema`. Legacy ``monitor.jsonl`` runs open through the
same reader. Sinks, the report, compare and the trainer callbacks go
through this package; nothing else parses its files.
"""

from __future__ import annotations

from hookscope.store.reader import RunStore, filter_of, open_run, read_run
from hookscope.store.writer import StoreWriter

__all__ = ["RunStore", "StoreWriter", "filter_of", "open_run", "read_run"]
