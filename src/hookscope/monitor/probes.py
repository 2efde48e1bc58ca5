"""Gradient probes of a compiled Monitor: identities whose backward records the gradient's row.

Tensor hooks on intermediate tensors would break the graph (dynamo needs
compiled autograd for them), so `hookscope.monitor.traced` wraps each
monitored output in one of these `torch.autograd.Function` s instead:

* `RowProbe` (extern rows, the CPU's default): the backward adds the row
  into a buffer outside the graph (`hookscope.stats.gradrow`), an op marked
  as having a side effect, so the graph keeps it;
* `Probe`: the backward hands the row back as the gradient of a leaf
  ``sink`` of all the rows, which autograd sums into ``sink.grad`` (tensor
  ops on devices other than the CPU).

Each clones its input, since a module downstream may modify it in place
(``x += residual``, ``ReLU(inplace=True)``).
"""

from __future__ import annotations

from typing import Any

import torch

from hookscope.stats.gradrow import grad_row_add_op
from hookscope.stats.rowop import grad_rows_op
from hookscope.stats.traced import GRAD_FIELDS, grad_row

__all__ = ["Probe", "RowProbe"]


class Probe(torch.autograd.Function):
    """Identity on ``x`` whose backward puts the gradient's row into ``sink``'s gradient.

    With ``extern`` the row is one ``grad_rows`` op (a fresh ``(rows, 4)``
    tensor a call: what `RowProbe` replaced on the CPU; benchmarks compare).
    """

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, sink: torch.Tensor, row: int, extern: bool
    ) -> torch.Tensor:
        ctx.row, ctx.extern = row, extern
        ctx.rows = sink.shape[0]
        ctx.dtype = sink.dtype
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None, None]:
        g = grad.detach()
        if ctx.extern:
            return grad, grad_rows_op(g, ctx.row, ctx.rows, ctx.dtype), None, None
        rows = torch.zeros(ctx.rows, len(GRAD_FIELDS), dtype=ctx.dtype, device=grad.device)
        rows[ctx.row] = grad_row(g, ctx.dtype)
        return grad, rows, None, None


class RowProbe(torch.autograd.Function):
    """Identity on ``x`` whose backward adds the gradient's row into a buffer outside the graph.

    One extern op (`hookscope.stats.gradrow`) per gradient, with no result.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, key: int, row: int) -> torch.Tensor:
        ctx.key, ctx.row = key, row
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        grad_row_add_op(grad.detach(), ctx.key, ctx.row)
        return grad, None, None
