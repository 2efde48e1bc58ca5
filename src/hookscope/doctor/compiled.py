"""Graph breaks under ``torch.compile``, and which of them hookscope caused (it should cause none).

`graph_breaks` traces one call of the model with ``torch._dynamo.explain``,
with every hook the model carries now (a `hookscope.Monitor` or session
opened on it included), and attributes each break to hookscope when a frame
of hookscope's own code is on the break's user stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookscope.errors import UsageError

_PACKAGE = str(Path(__file__).resolve().parent.parent)


@dataclass(frozen=True)
class GraphBreak:
    """One graph break: dynamo's reason, where it happened, and whether hookscope's code did it."""

    reason: str
    where: str
    by_hookscope: bool


@dataclass(frozen=True)
class GraphBreakReport:
    """What dynamo made of one call: how many graphs, and every break."""

    graphs: int
    breaks: tuple[GraphBreak, ...]

    @property
    def by_hookscope(self) -> tuple[GraphBreak, ...]:
        """The breaks hookscope's hooks caused (empty when all is well)."""
        return tuple(b for b in self.breaks if b.by_hookscope)


def graph_breaks(model: nn.Module, *inputs: Any, **kwargs: Any) -> GraphBreakReport:
    """Trace ``model(*inputs, **kwargs)`` with dynamo and report its graph breaks.

    ``torch._dynamo.explain`` runs the call once (hooks fire, statistics of
    an open Monitor count) and resets dynamo's caches, as its documentation
    says: compiled models recompile on their next call.

    Raises:
        UsageError: ``model`` is not an ``nn.Module``.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"graph_breaks() needs an nn.Module, got {type(model).__name__}")
    explained = torch._dynamo.explain(model)(*inputs, **kwargs)
    breaks = []
    for item in explained.break_reasons:
        frames = list(getattr(item, "user_stack", []) or [])
        ours = [f for f in frames if str(Path(f.filename).resolve()).startswith(_PACKAGE)]
        last = (ours or frames)[-1] if frames else None
        where = f"{last.filename}:{last.lineno}" if last is not None else "?"
        breaks.append(GraphBreak(str(item.reason).strip().splitlines()[0], where, bool(ours)))
    return GraphBreakReport(explained.graph_count, tuple(breaks))
