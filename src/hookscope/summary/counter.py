"""Dispatch-level MAC counting: a `TorchDispatchMode`, not a hook.

Every ATen op the forward runs passes through `MacCounter.__torch_dispatch__`
(functional ops, ``@``, ``einsum`` and fused kernels included), is counted by
its formula in `hookscope.summary.formulas`, and is attributed to the
innermost module call open at that moment. The module stack itself is kept by
forward (pre-)hooks in `hookscope.summary.collect`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

from hookscope.summary.formulas import FORMULAS, Formula, OpCategory, categorize, op_name
from hookscope.summary.opcache import OpCache


@dataclass(eq=False, slots=True)
class CallRecord:
    """One call of one module while the summary runs (mutable, internal).

    ``macs`` is this call's total (its own ops and every nested call's);
    ``own_macs`` only the ops run directly in its ``forward``.
    """

    index: int
    name: str
    type_name: str
    depth: int
    module_id: int
    call: int
    input_shapes: tuple[tuple[int, ...], ...] = ()
    output_shapes: tuple[tuple[int, ...], ...] = ()
    output_bytes: int = 0
    macs: int = 0
    own_macs: int = 0
    finished: bool = False
    children: list[CallRecord] = field(default_factory=list)


@dataclass
class OpTally:
    """Uncounted op: how often it ran and what kind of op it is."""

    category: OpCategory
    calls: int = 0


class MacCounter(TorchDispatchMode):
    """Count multiply-accumulates of every op, attributed to ``stack[-1]``.

    Args:
        stack: the open module calls, outermost first; shared with the hooks
            that push and pop it. Ops run while it is empty count only in
            the totals.
        cache: on the meta device, an `OpCache` that runs each op once per
            distinct argument metadata.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Otherwise torch wraps ``__torch_dispatch__`` in ``torch._dynamo.disable``,
        # a context switch on every op (summary ~9% slower) for a mode that
        # never runs under torch.compile.
        return False

    def __init__(self, stack: list[CallRecord], cache: OpCache | None = None) -> None:
        super().__init__()
        self.stack = stack
        self.cache = cache
        self.total = 0
        self.by_op: dict[str, int] = {}
        self.uncounted: dict[str, OpTally] = {}

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs) if self.cache is None else self.cache.run(func, args, kwargs)
        formula, name, category = _OPS.get(func) or _op_info(func)
        if formula is None:
            if category != "free":
                tally = self.uncounted.get(name)
                if tally is None:
                    tally = self.uncounted[name] = OpTally(category)
                tally.calls += 1
            return out
        macs = formula(args, kwargs, out)
        self.by_op[name] = self.by_op.get(name, 0) + macs
        self.total += macs
        if self.stack:
            self.stack[-1].own_macs += macs  # ancestors' totals: `add_up` after the forward
        return out

    @staticmethod
    def add_up(records: list[CallRecord]) -> None:
        """Set each call's ``macs``: its own plus its nested calls' (``records`` in call order)."""
        for record in reversed(records):  # nested calls come after their caller
            record.macs = record.own_macs + sum(child.macs for child in record.children)


#: func -> (its MAC formula, or None; its name; its category: what an op without a formula is)
_OPS: dict[Any, tuple[Formula | None, str, OpCategory]] = {}


def _op_info(func: Any) -> tuple[Formula | None, str, OpCategory]:
    formula = FORMULAS.get(func)
    info = _OPS[func] = (formula, op_name(func), categorize(func))
    return info
