"""Which phases a step should have recorded and did not, and an honest warning about it.

Hooks can stop running without an error: a compiled graph traced before
the Monitor was opened (or from an identical hookless model) keeps running
without them, while parameter-gradient hooks, which run outside compiled
graphs, still fire. A step that then reports 40 records instead of 162
looks complete. `missing_phases` compares what ran with what the Monitor
hooked, and `warn_missing` says so once per Monitor, naming the model and
the fix.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Collection, Sequence

from torch import nn

from hookscope.errors import HookscopeWarning, HookWarning
from hookscope.hooks.compiled import (
    StaleGraphWarning,
    compiled_root,
    compiled_wrapper_of,
    stale_graphs,
)
from hookscope.monitor.entries import Entry
from hookscope.monitor.records import Phase


def missing_phases(entries: Sequence[Entry], expected: Collection[Phase]) -> tuple[Phase, ...]:
    """Hooked phases with no entry although a later phase of the same step has some.

    The forward is missing when gradients were seen without it; module
    gradients when parameter gradients were seen without them; parameter
    gradients when module gradients were seen without them. An eval step
    (forward only) misses nothing; nor does a step with no entries at all
    (`CompiledSupport` decides about those).
    """
    seen = {entry.phase for entry in entries}
    missing: list[Phase] = []
    if "forward" in expected and "forward" not in seen and seen & {"backward", "param"}:
        missing.append("forward")
    if "backward" in expected and "backward" not in seen and "param" in seen:
        missing.append("backward")
    if "param" in expected and "param" not in seen and "backward" in seen:
        missing.append("param")
    return tuple(missing)


def warn_missing(model: nn.Module, step: int, missing: Sequence[Phase]) -> None:
    """Warn that ``step`` recorded no ``missing`` statistics, with the likely cause and fix."""
    root = compiled_root(model) or model
    what = ", ".join(missing)
    wrapper = None if compiled_root(model) is not None else compiled_wrapper_of(model)
    compiled = compiled_root(model) is not None or wrapper is not None or stale_graphs(model) > 0
    name = type(root).__name__
    if compiled:
        through = " (called through a torch.compile wrapper of it)"
        cause = (
            f"{name}{through if wrapper is not None else ''} runs compiled graphs traced "
            "without the Monitor's hooks (compiled and run before the Monitor was opened, or "
            "an identical model was compiled earlier in this process)"
        )
        fix = (
            "open the Monitor before the first compiled call, or call torch._dynamo.reset() "
            "(or recompile the model) after opening it"
        )
    else:
        cause = f"the hooks on {name} did not run in that phase"
        fix = "call modules as module(x), not module.forward(x); run hookscope.doctor(model, x)"
    warnings.warn(
        f"Monitor step {step} recorded no {what} statistics: {cause}. Fix: {fix}. "
        "StepResult.missing names the missing phases.",
        StaleGraphWarning if compiled else HookWarning,
        stacklevel=5,  # warn_missing, check, _finish_step, step, the caller
    )


def graphs_so_far() -> int:
    """How many graphs dynamo has compiled in this process (0 without dynamo loaded)."""
    if "torch._dynamo" not in sys.modules:
        return 0
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def runs_stale_graphs(model: nn.Module) -> bool:
    """True when ``model`` is compiled (itself, or held by a live ``torch.compile`` wrapper)."""
    return compiled_root(model) is not None or compiled_wrapper_of(model) is not None


def warn_inputs(model: nn.Module, step: int) -> None:
    """Warn that ``inputs=True`` statistics were not taken inside a compiled graph."""
    root = compiled_root(model) or model
    warnings.warn(
        f"Monitor step {step} recorded no input statistics (inputs=True) for the modules of "
        f"{type(root).__name__} that ran inside a torch.compile graph: input statistics are "
        "eager-only. Fix: monitor the eager model, or record the outputs of the modules that "
        "produce those inputs. StepResult.missing contains 'inputs'.",
        HookWarning,
        stacklevel=5,  # warn_inputs, check, _finish_step, step, the caller
    )


def warn_unsummarised(step: int, entries: Sequence[Entry], warned: list[bool]) -> None:
    """Warn once (``warned[0]`` remembers) that a complex tensor is summarised by its magnitude.

    Its records look like any other's; ``TensorInfo.note`` says it too. (A
    0-element tensor, which gets no records, is noted there only: empty
    tensors such as unused caches are common and harmless.)
    """
    if warned[0]:
        return
    for entry in entries:
        if entry.red.kind != "complex" or not entry.roles:
            continue
        warned[0] = True
        module, path, _ = entry.roles[0]
        warnings.warn(
            f"Monitor step {step}: {entry.phase} tensor {path!r} of {module or '(root)'!r} is "
            f"{str(entry.dtype).removeprefix('torch.')}: its statistics (mean, std, min, max, "
            "rms, norm) are of the magnitude |z|, not of the real or imaginary part; "
            "StepResult.tensors notes it. Said once per Monitor.",
            HookscopeWarning,
            stacklevel=5,  # warn_unsummarised, check, _finish_step, step, the caller
        )
        return
