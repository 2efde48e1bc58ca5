"""The Monitor's options: activation modules, zero-fraction plans, validation of values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from torch import nn

from hookscope.errors import UsageError
from hookscope.hooks.policy import ON_ERROR
from hookscope.monitor.ranks import Grads, Ranks
from hookscope.stats import ACTIVATION_STATS, ALL_STATS

ZeroPolicy = Literal["activations", "all", "none"]
_ZEROS = get_args(ZeroPolicy)
_RANKS = get_args(Ranks)
_GRADS = (True, False, *get_args(Grads))

#: Modules whose output is "post-activation": zero fraction and the dead rule apply.
ACTIVATIONS: tuple[type[nn.Module], ...] = (
    nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU, nn.RReLU, nn.ELU, nn.SELU, nn.CELU,
    nn.GELU, nn.SiLU, nn.Mish, nn.Hardswish, nn.Hardsigmoid, nn.Hardtanh, nn.Softplus,
    nn.Threshold, nn.Sigmoid, nn.Tanh, nn.GLU, nn.Softsign, nn.LogSigmoid,
)  # fmt: skip


def is_activation(module: nn.Module) -> bool:
    """True for torch activation modules and HuggingFace ``transformers.activations``."""
    return isinstance(module, ACTIVATIONS) or type(module).__module__.endswith(".activations")


def zero_plan(module: nn.Module, policy: ZeroPolicy) -> Literal["none", "count", "nonneg"]:
    if policy == "none" or (policy == "activations" and not is_activation(module)):
        return "none"
    nonneg = isinstance(module, nn.ReLU) or (
        isinstance(module, nn.Hardtanh) and float(module.min_val) >= 0
    )
    return "nonneg" if nonneg else "count"


def check_ranks(ranks: object, grads: object) -> None:
    """``ranks`` and ``grads`` (see `hookscope.monitor.ranks`)."""
    if ranks not in _RANKS:
        raise UsageError(f"ranks must be one of {_RANKS}, got {ranks!r}")
    if not (isinstance(grads, bool) or grads in _GRADS[2:]):
        raise UsageError(f"grads must be one of {_GRADS}, got {grads!r}")


def check_options(every: object, zeros: object, on_error: object, sinks: Sequence[Any]) -> None:
    if not isinstance(every, int) or isinstance(every, bool) or every < 1:
        raise UsageError(f"every must be an int >= 1, got {every!r}")
    if zeros not in _ZEROS:
        raise UsageError(f"zeros must be one of {_ZEROS}, got {zeros!r}")
    if on_error not in ON_ERROR:
        raise UsageError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    for sink in sinks:
        if not (callable(getattr(sink, "write", None)) and callable(getattr(sink, "close", None))):
            raise UsageError(f"a sink needs write(result) and close() methods, got {sink!r}")


def check_history(history: object) -> int | None:
    """``history``: an int >= 0 (recorded steps kept in memory) or None (all)."""
    if history is None:
        return None
    if not isinstance(history, int) or isinstance(history, bool) or history < 0:
        raise UsageError(f"history must be an int >= 0 or None, got {history!r}")
    return history


def check_stats(stats: Sequence[str] | None) -> tuple[str, ...]:
    if stats is None:
        return ACTIVATION_STATS
    if isinstance(stats, str):
        stats = [stats]
    chosen = tuple(stats)
    unknown = [s for s in chosen if s not in ALL_STATS]
    if unknown:
        raise UsageError(f"unknown stats {unknown!r}; choose from {', '.join(ALL_STATS)}")
    return chosen
