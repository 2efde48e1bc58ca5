"""`Entry`: one reduced tensor of a step, queued in execution order until `Monitor.step`.

The eager hooks (`hookscope.monitor.collector`) and the compiled-graph rows
(`hookscope.monitor.traced`) both make entries; `hookscope.monitor.results`
and `hookscope.monitor.coverage` read them. This module sits below all four.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hookscope.monitor.records import Phase
from hookscope.stats import Reduction

#: (module or parameter name, tensor path, reported?) — one tensor can play
#: several roles, e.g. output of one module and input of the next.
Role = tuple[str, str, bool]


@dataclass(eq=False, slots=True)
class Entry:
    """One reduced tensor, queued until the step ends."""

    phase: Phase
    roles: list[Role]
    red: Reduction
    shape: tuple[int, ...]
    dtype: torch.dtype
