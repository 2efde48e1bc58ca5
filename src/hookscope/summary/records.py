"""The summary as data: frozen records with JSON-ready views.

`SummaryData` holds every number of a summary; the renderers in
`hookscope.summary.format` read it, and `hookscope.summary.result.ModelSummary`
(what `hookscope.summary` returns) adds them as methods on top, so the data
never imports its renderings.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeVar

from hookscope.summary.formulas import OpCategory
from hookscope.summary.params import Trainable

Shapes = tuple[tuple[int, ...], ...]
SummaryFormat = Literal["table", "json", "csv", "markdown"]
_Summary = TypeVar("_Summary", bound="SummaryData")


def _shapes(value: Any) -> Shapes:
    return tuple(tuple(int(n) for n in shape) for shape in value)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One call of one module, in execution order.

    Attributes:
        index: position in execution order (0 is the root's call).
        name: qualified module name (``""`` is the root).
        type: the module's class name.
        depth: nesting depth of the call (root 0).
        call: 1 for a module's first call, 2 for its second, ...
        input_shapes: shapes of tensors in the positional and keyword inputs.
        output_shapes: shapes of tensors in the output.
        own_params: parameters held by the module itself (not its children).
        params: every parameter under the module, each tensor once.
        trainable: ``"yes"``, ``"no"``, ``"partial"`` or ``""`` (no parameters).
        macs: multiply-accumulates of this call, nested calls included.
        own_macs: multiply-accumulates run directly in this module's forward.
        output_bytes: bytes of the output tensors.
        leaf: the call ran no nested module.
    """

    index: int
    name: str
    type: str
    depth: int
    call: int
    input_shapes: Shapes
    output_shapes: Shapes
    own_params: int
    params: int
    trainable: Trainable
    macs: int
    own_macs: int
    output_bytes: int
    leaf: bool

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists for shapes)."""
        data = asdict(self)
        data["input_shapes"] = [list(s) for s in self.input_shapes]
        data["output_shapes"] = [list(s) for s in self.output_shapes]
        return data


@dataclass(frozen=True)
class UncountedOp:
    """An ATen op that ran but has no MAC formula.

    ``category`` is ``"convention"`` (elementwise, normalisation, pooling,
    softmax, reductions: excluded by the MAC convention) or ``"unknown"`` (an
    op with a cost hookscope has no formula for).
    """

    op: str
    calls: int
    category: OpCategory


@dataclass(frozen=True)
class SummaryData:
    """Every number of a model summary (`ModelSummary` without its renderings).

    Attributes:
        model: the root module's class name.
        device: where the forward ran (``"meta"``, ``"cpu"``, ...).
        fallback_reason: why a meta run was abandoned for a real one, or None.
        depth: the row depth limit (None: every depth).
        input_shapes: shapes of the model's input tensors.
        output_shapes: shapes of the model's output tensors.
        rows: module calls in execution order, up to ``depth``.
        total_params: parameters, tied and shared tensors once.
        trainable_params: those with ``requires_grad``.
        frozen_params: those without.
        param_bytes: bytes of all parameters.
        params_by_dtype: parameter count per dtype name.
        param_bytes_by_dtype: parameter bytes per dtype name.
        buffers: buffer elements (BatchNorm statistics, ...), each tensor once.
        buffer_bytes: bytes of the buffers.
        macs: multiply-accumulates of the whole forward (every depth).
        macs_by_op: MACs per ATen op.
        uncounted_ops: ops with arithmetic that the MACs leave out.
        activation_bytes: estimated forward activation memory: bytes of
            every leaf call's output.
        not_run: qualified names of modules that never ran (not used).
            Containers without a forward of their own (``ModuleList``,
            ``ModuleDict``) are never called by design and not listed.
        called_directly: qualified names of modules run through a direct
            ``.forward()`` call: their hooks did not fire (the doctor's
            ``forward_called_directly``); their MACs count, in the caller.
    """

    model: str
    device: str
    fallback_reason: str | None
    depth: int | None
    input_shapes: Shapes
    output_shapes: Shapes
    rows: tuple[SummaryRow, ...]
    total_params: int
    trainable_params: int
    frozen_params: int
    param_bytes: int
    params_by_dtype: dict[str, int]
    param_bytes_by_dtype: dict[str, int]
    buffers: int
    buffer_bytes: int
    macs: int
    macs_by_op: dict[str, int]
    uncounted_ops: tuple[UncountedOp, ...]
    activation_bytes: int
    not_run: tuple[str, ...] = ()
    called_directly: tuple[str, ...] = ()

    @property
    def flops(self) -> int:
        """Floating-point operations: 2 x MACs."""
        return 2 * self.macs

    @property
    def unknown_ops(self) -> tuple[UncountedOp, ...]:
        """Uncounted ops hookscope has no formula for (not excluded by convention)."""
        return tuple(op for op in self.uncounted_ops if op.category == "unknown")

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-serialisable plain data."""
        data = asdict(self)
        data["flops"] = self.flops
        data["input_shapes"] = [list(s) for s in self.input_shapes]
        data["output_shapes"] = [list(s) for s in self.output_shapes]
        data["rows"] = [row.to_dict() for row in self.rows]
        data["uncounted_ops"] = [asdict(op) for op in self.uncounted_ops]
        data["not_run"] = list(self.not_run)
        data["called_directly"] = list(self.called_directly)
        return data

    @classmethod
    def from_dict(cls: type[_Summary], data: dict[str, Any]) -> _Summary:
        """The summary back from `to_dict` data (e.g. a ``summary.json``).

        Raises:
            KeyError, TypeError, ValueError: ``data`` is not `to_dict` output.
        """
        fields = dict(data)
        fields.pop("flops", None)
        fields["input_shapes"] = _shapes(fields["input_shapes"])
        fields["output_shapes"] = _shapes(fields["output_shapes"])
        fields["rows"] = tuple(
            SummaryRow(
                **{
                    **row,
                    "input_shapes": _shapes(row["input_shapes"]),
                    "output_shapes": _shapes(row["output_shapes"]),
                }
            )
            for row in fields["rows"]
        )
        fields["uncounted_ops"] = tuple(UncountedOp(**op) for op in fields["uncounted_ops"])
        fields["not_run"] = tuple(fields.get("not_run", ()))
        fields["called_directly"] = tuple(fields.get("called_directly", ()))
        return cls(**fields)

    def to_json(self, indent: int | None = 2) -> str:
        """`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)
