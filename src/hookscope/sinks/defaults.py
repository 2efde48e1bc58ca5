"""The sinks a run directory gets by default (``hookscope run --monitor``, the trainer callbacks).

For the N-th monitored model (N = 0 for the first): the run store
``monitor/`` (``monitor-N/``), or with ``fmt="jsonl"`` the legacy
``monitor.jsonl`` (``monitor-N.jsonl``); plus, when tensorboard is installed,
a light TensorBoard summary under ``tensorboard/`` (``tensorboard/model-N/``):
a few events per step, not one per record (`TensorBoardSummarySink`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from hookscope.errors import MissingExtraError, UsageError
from hookscope.sinks.base import Sink
from hookscope.sinks.jsonl import JsonlSink
from hookscope.sinks.store import StoreSink
from hookscope.store.layout import store_name

Format = Literal["parquet", "jsonl"]
FORMATS: tuple[Format, ...] = ("parquet", "jsonl")


def check_format(fmt: object) -> Format:
    """``fmt`` as a `Format`, or a UsageError showing the bad value."""
    if fmt not in FORMATS:
        raise UsageError(f"format must be one of {FORMATS}, got {fmt!r}")
    return fmt


def run_sinks(
    out_dir: Path, index: int = 0, *, fmt: Format = "parquet", tensorboard: bool = True
) -> tuple[list[Sink], Path]:
    """The sinks of model ``index`` in ``out_dir`` and the path of its statistics.

    Returns:
        ``(sinks, path)``: the store sink (or JSONL sink) first, then the
        TensorBoard summary when wanted and installed; ``path`` is the store
        folder (or the JSONL file) this process writes.
    """
    main: StoreSink | JsonlSink
    if check_format(fmt) == "parquet":
        main = StoreSink(out_dir / store_name(index))
    else:
        main = JsonlSink(out_dir / ("monitor.jsonl" if index == 0 else f"monitor-{index}.jsonl"))
    sinks: list[Sink] = [main]
    if tensorboard:
        try:
            from hookscope.sinks.tensorboard_summary import TensorBoardSummarySink

            board = out_dir / "tensorboard"
            sinks.append(TensorBoardSummarySink(board if index == 0 else board / f"model-{index}"))
        except MissingExtraError:
            pass  # statistics only
    return sinks, main.path
