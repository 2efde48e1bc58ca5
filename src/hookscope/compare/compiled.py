"""Running a ``torch.compile``d side of a comparison: what is measured, and no silent fallback.

The recorder's hooks run eagerly (`torch.compiler.disable`), so dynamo breaks
the graph at every module call: each module's own code is compiled, on its
own. Errors that only appear when inductor fuses across module boundaries
are not seen; the side's label says so.

Each module instance whose attributes or shapes differ (``stride``,
``nf``, the weight's shape) recompiles the shared ``forward`` code, so a
ResNet or a transformer quickly passes dynamo's ``recompile_limit`` (8),
after which dynamo runs those calls *eagerly* and only logs it. While the
comparison runs, `compiled_run` raises the limits to cover every module and
collects dynamo's "hit config.recompile_limit" log records; any left are
turned into a `CompileFallbackWarning` naming the functions that ran eagerly.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import torch
from torch import nn

from hookscope._interrupts import critical_contextmanager
from hookscope.errors import HookscopeWarning
from hookscope.hooks.compiled import compiled_root, warn_stale

#: dynamo logs "torch._dynamo hit config.recompile_limit (8)" here.
_DYNAMO_LOGGER = "torch._dynamo.convert_frame"


class CompileFallbackWarning(HookscopeWarning):
    """``torch.compile`` ran part of a compared model eagerly (recompile limit hit)."""


class _LimitHits(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.functions: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "hit config." in text and "recompile_limit" in text:
            lines = text.splitlines()
            what = next((ln.strip() for ln in lines if ln.strip().startswith("function:")), "")
            self.functions.append(what.removeprefix("function:").strip() or lines[0])


def compiled_label(label: str, model: nn.Module) -> str:
    """What a comparison measures of ``model`` when it is compiled, else ``label``."""
    root = compiled_root(model)
    if root is None:
        return label
    return (
        f"torch.compile({type(root).__name__}), graph split at every module "
        "(each module compiled on its own; fusion across modules not measured)"
    )


@critical_contextmanager
def compiled_run(model: nn.Module) -> Iterator[None]:
    """Run ``model`` (compiled or not) with recompile limits that fit it; warn if it still fell back.

    Warns `StaleGraphWarning` first when the model's ``forward`` already has
    compiled graphs traced without the comparison's hooks (they would run
    without them), and `CompileFallbackWarning` after the run when dynamo
    still hit a recompile limit.
    """
    if compiled_root(model) is None:
        yield
        return
    warn_stale(model, "compare", stacklevel=7)  # (set-up and tear-down run critical)
    config = torch._dynamo.config
    modules = sum(1 for _ in model.modules())
    limit = max(config.recompile_limit, 2 * modules)
    total = max(config.accumulated_recompile_limit, 8 * modules)
    hits = _LimitHits()
    logger = logging.getLogger(_DYNAMO_LOGGER)
    logger.addHandler(hits)
    try:
        with config.patch(recompile_limit=limit, accumulated_recompile_limit=total):
            yield
    finally:
        logger.removeHandler(hits)
    if hits.functions:
        shown = "; ".join(dict.fromkeys(hits.functions))
        warnings.warn(
            f"torch.compile hit its recompile limit (raised to {limit} for this comparison) "
            f"in {shown}: dynamo ran the calls past it eagerly, so their rows compare eager "
            "code, not compiled code. Raise torch._dynamo.config.recompile_limit (and "
            "accumulated_recompile_limit) before calling compare.",
            CompileFallbackWarning,
            stacklevel=7,
        )
