"""The one place that decides compile-aware paths: is dynamo tracing, and can hooks run?

Under ``torch.compile`` dynamo traces a module's hooks into the graph
together with its forward, so hook code must be traceable: no locks, no
ctypes, no host reads, no Python state that changes on every call (an int
attribute read in the trace becomes a guard, and a new value a recompile).
Code that must behave differently while it is traced asks `tracing`.

Hooks do not run at all in a compiled region traced *before* they were
added: dynamo does not guard on module hook dicts
(``torch._dynamo.config.skip_nnmodule_hook_guards``, on by default), so it
keeps running the cached graph it traced without them. That happens when a
session or Monitor is opened after the model's first compiled call, and also
when an identical model (same ``forward`` code) was compiled earlier in the
process. `stale_graphs` detects it and `warn_stale` says what to do.
"""

from __future__ import annotations

import gc
import sys
import warnings
from types import CodeType

import torch
from torch import nn

from hookscope.errors import HookWarning

__all__ = [
    "StaleGraphWarning",
    "compiled_root",
    "compiled_wrapper_of",
    "stale_graphs",
    "tracing",
    "unwrap_compiled",
    "warn_stale",
]


class StaleGraphWarning(HookWarning):
    """Hooks were added to a model whose compiled graphs were traced without them."""


def tracing() -> bool:
    """True while dynamo traces the current call (``torch.compiler.is_compiling()``).

    Dynamo reads this as a constant True while tracing, so a branch on it is
    resolved at trace time and costs nothing in the compiled graph.
    """
    return bool(torch.compiler.is_compiling())


def compiled_root(model: nn.Module) -> nn.Module | None:
    """The module whose ``forward`` dynamo compiles for ``model``, or None if it is not compiled.

    ``torch.compile(model)`` returns a wrapper holding the model as
    ``_orig_mod``; ``model.compile()`` compiles the model's own call in place.
    """
    inner = model._modules.get("_orig_mod")
    if inner is not None and type(model).__name__ == "OptimizedModule":
        return inner
    if getattr(model, "_compiled_call_impl", None) is not None:
        return model
    return None


def compiled_wrapper_of(model: nn.Module) -> nn.Module | None:
    """A live ``torch.compile`` wrapper that holds ``model`` (``cm`` of ``cm = torch.compile(model)``), or None.

    Hooks on ``model`` do not run when it is called through such a wrapper
    whose graphs were traced before the hooks were added, and nothing on
    ``model`` tells. This walks the garbage collector's objects (tens of
    milliseconds in a large process), so it is for diagnosing a step that
    recorded nothing, not for every call; without dynamo loaded it returns at once.
    """
    if "torch._dynamo" not in sys.modules:
        return None
    for obj in gc.get_objects():
        wrapper = type(obj).__name__ == "OptimizedModule" and isinstance(obj, nn.Module)
        if wrapper and obj._modules.get("_orig_mod") is model:
            return obj
    return None


def unwrap_compiled(model: nn.Module) -> nn.Module:
    """The model a ``torch.compile`` wrapper holds, else ``model`` itself."""
    inner = compiled_root(model)
    return model if inner is None else inner


def _cached_graphs(code: CodeType) -> int:
    if "torch._dynamo" not in sys.modules:
        # Nothing was compiled in this process. Importing dynamo to find out
        # would cost ~0.7 s, and with it loaded a gloo rank that ran async
        # collectives aborts now and then at exit (torch 2.13).
        return 0
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:  # pragma: no cover - older torch without the helper
        return 0
    return len(_debug_get_cache_entry_list(code))


def stale_graphs(model: nn.Module) -> int:
    """How many compiled graphs of ``model``'s ``forward`` already exist (traced without new hooks).

    Counts dynamo's cache entries for the ``forward`` code of the model (or
    of the model a ``torch.compile`` wrapper holds). They may have been
    traced from this model or from any other instance of its class; either
    way dynamo reuses them without the hooks added since.
    """
    root = compiled_root(model) or model
    forward = getattr(type(root).forward, "__code__", None)
    return 0 if forward is None else _cached_graphs(forward)


def warn_stale(model: nn.Module, what: str, *, eager: bool = False, stacklevel: int = 3) -> bool:
    """Warn when ``what`` (e.g. ``"Monitor"``) hooks a model with cached hookless compiled graphs.

    By default only compiled models (a ``torch.compile`` wrapper, or after
    ``model.compile()``) are checked: an eager model whose class was compiled
    elsewhere is caught later, when a Monitor step misses its forward
    records. ``eager=True`` (sessions, which have no steps) also warns for an
    eager model whose ``forward`` has compiled graphs: calling it through
    ``torch.compile`` runs those graphs without the new hooks.

    Returns:
        True when it warned.
    """
    root = compiled_root(model)
    count = stale_graphs(model) if root is not None or eager else 0
    if not count:
        return False
    name = type(root or model).__name__
    when = "" if root is not None else " (when called through torch.compile)"
    warnings.warn(
        f"{what} added hooks to {name}, whose forward already has {count} "
        f"compiled graph(s) traced without them: torch.compile keeps running those graphs{when}, "
        "so the hooks will not run inside them (forward and module-gradient hooks skipped). "
        f"Open the {what} before the first compiled call, or call torch._dynamo.reset() "
        "before it to recompile with the hooks.",
        StaleGraphWarning,
        stacklevel=stacklevel,
    )
    return True
