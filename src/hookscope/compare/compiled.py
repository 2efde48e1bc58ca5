"""Running a ``torch.compile``d side of a comparison: what is measured, and no silent fallback.

Forward only (``backward=False``, ``mode="propagate"``): the recorder's
hooks are traced into the graph (`hookscope.compare.recorder`), so the whole
model is compiled once, with each module's output kept as an extra graph
output (inductor still fuses across modules, but must write those outputs).
With ``backward=True`` or ``mode="isolate"`` the hooks run eagerly
(`torch.compiler.disable`), so dynamo breaks the graph at every module call:
each module's own code is compiled on its own (79 graphs instead of 2 for a
2-layer GPT-2), and errors that only appear when inductor fuses across module boundaries are
not seen. The side's label says both.

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
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from hookscope._interrupts import critical_contextmanager
from hookscope.errors import HookscopeWarning
from hookscope.hooks.compiled import compiled_root, warn_stale

#: torch.jit.script_method's deprecation warning (from torch.utils.mkldnn, see `compiled_run`).
_SCRIPT_METHOD = r"`torch\.jit\.script_method` is deprecated"
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
        f"torch.compile({type(root).__name__}) (forward: one graph, each module's output kept; "
        "backward or isolate: graph split at every module, fusion across modules not measured)"
    )


@contextmanager
def quiet_torch_deprecations() -> Iterator[None]:
    """Hide torch's own ``torch.jit.script_method`` deprecation warnings while this runs.

    ``torch.compile``'s first use in a process imports inductor, which imports
    ``torch.utils.mkldnn``, whose 14 ``@torch.jit.script_method`` decorators
    each warn (torch 2.13): torch's own deprecation, nothing a comparison or
    its user can act on. Only that message is filtered.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _SCRIPT_METHOD, DeprecationWarning)
        yield


@critical_contextmanager
def compiled_run(model: nn.Module, *, traced: bool = False) -> Iterator[None]:
    """Run ``model`` (compiled or not) with recompile limits that fit it; warn if it still fell back.

    Raising the limits and putting them back are critical (`critical_contextmanager`):
    a Ctrl-C meanwhile is raised once dynamo's configuration is whole again.

    Warns `StaleGraphWarning` first when the model's ``forward`` already has
    compiled graphs traced without the comparison's hooks (they would run
    without them), and `CompileFallbackWarning` after the run when dynamo
    still hit a recompile limit. ``traced``: the hooks are traced into the
    graph, so dynamo guards on the module hook dicts for this run (a graph
    traced with another run's hooks would replay that run's side effects).
    """
    if compiled_root(model) is None:
        yield
        return
    if not traced:  # traced: the hook guards below recompile a graph traced without them
        warn_stale(model, "compare", stacklevel=7)  # (two frames of critical_contextmanager)
    config = torch._dynamo.config
    modules = sum(1 for _ in model.modules())
    limit = max(config.recompile_limit, 2 * modules)
    total = max(config.accumulated_recompile_limit, 8 * modules)
    hits = _LimitHits()
    logger = logging.getLogger(_DYNAMO_LOGGER)
    logger.addHandler(hits)
    try:
        patch: dict[str, Any] = {"recompile_limit": limit, "accumulated_recompile_limit": total}
        if traced:
            patch["skip_nnmodule_hook_guards"] = False
        with config.patch(**patch), quiet_torch_deprecations():
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
            stacklevel=7,  # (three frames of critical_contextmanager's tear-down)
        )
