"""The Monitor inside ``torch.compile``d graphs: statistics as graph ops, one buffer per step.

When dynamo traces a monitored module, `Collector` hands the forward hook to
`TracedCollector.on_forward` (see `hookscope.hooks.compiled.tracing`):

* each output tensor's statistics are merged into a fixed row of a device
  buffer (``module index * SLOTS + tensor index``), so the graph gains one
  small mutated input instead of host reads. On the CPU a row is one node,
  `hookscope.stats.rowop.merge_row_op`, an extern kernel that reduces the
  tensor in one pass of hookscope's C kernel; on other devices it is
  `hookscope.stats.traced.reduce_row`'s tensor ops, which inductor fuses with
  the kernels that make the output (`TracedCollector.extern` says which).
  On the CPU a float32 BatchNorm's row is made from its input
  (`hookscope.stats.rowop.affine_row_op`), and so is the row of a ReLU
  called next on its output, so that inductor need store neither output;
* gradients w.r.t. those outputs go through `_Probe`, an identity whose
  backward writes the gradient's row into the gradient of ``sink``, a leaf
  tensor: autograd accumulates it in ``sink.grad`` like any parameter's
  (the row: `hookscope.stats.rowop.grad_rows_op` or tensor ops, as above).
  Tensor hooks on intermediate tensors would break the graph (dynamo needs
  compiled autograd for them). The probe clones the output, since a module
  downstream may modify it in place (``x += residual``, ``ReLU(inplace=True)``);
* what the rows hold (tensor paths, shapes, dtypes) is written to a plain
  object per module, an attribute store dynamo replays after each run without
  guarding on it.

`TracedCollector.take` reads the buffer and ``sink.grad`` once per step and
turns the rows into the same `Entry` objects as the eager path. Parameter
gradients need nothing here: ``AccumulateGrad`` and its hooks run outside
the compiled graph, in eager mode.

Not traced: ``inputs=True`` statistics and the input finiteness checks that
tell a NaN coming into the model from one made by a module; more than
`SLOTS` tensors in one module's output (the rest are skipped); gradient
probes on outputs that are not a tensor or a tuple/list of tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.modules import module as _module

from hookscope.monitor.collector import Entry
from hookscope.stats import Plan, kind_of, tensors_in
from hookscope.stats.reduce import Kind
from hookscope.stats.rowop import affine_row_op, grad_rows_op, merge_row_op, move_row_op
from hookscope.stats.traced import (
    FIELDS,
    GRAD_FIELDS,
    accumulator_dtype,
    empty_rows,
    grad_reduction,
    grad_row,
    merge_row,
    reduce_row,
    to_reduction,
)

#: Tensors of one module output that get a row.
SLOTS = 8

#: ``(tensor, plan, accumulator dtype) -> row``: a forward row as tensor ops.
RowFn = Callable[[torch.Tensor, Plan, torch.dtype], torch.Tensor]


def _relu_input(
    module: nn.Module | None, args: tuple[Any, ...], output: Any
) -> torch.Tensor | None:
    """The input of an out-of-place ``nn.ReLU`` whose output is ``relu(input)``, else None.

    Only float32 (the one dtype `hookscope.stats.rowop.relu_row_values` reads
    in one pass); an in-place ReLU's input is its output.
    """
    if type(module) is not nn.ReLU or module.inplace or len(args) != 1:
        return None
    x = args[0]
    if not isinstance(x, torch.Tensor) or not isinstance(output, torch.Tensor):
        return None
    return x if x.dtype == torch.float32 and x.shape == output.shape else None


#: A BatchNorm's output as its input and per-channel parts: ``(x, mean, scale, bias)``,
#: the output being ``(x - mean) * scale + bias`` along dim 1.
Affine = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)


def _norm_parts(module: nn.Module | None, args: tuple[Any, ...], output: Any) -> Affine | None:
    """A float32 BatchNorm's output as `Affine` parts of its input, else None.

    The mean and variance are the batch's (``var_mean`` over every dim but 1,
    as BatchNorm computes them: inductor merges the two) in training mode,
    the running ones otherwise. Reading the input, which the backward keeps
    anyway, instead of the output lets inductor keep BatchNorm → ReLU →
    pooling in one kernel without storing the BatchNorm output.
    """
    if type(module) not in _NORMS or len(args) != 1:
        return None
    assert isinstance(module, nn.modules.batchnorm._BatchNorm)
    if not _hooks_alone(module):
        return None
    x = args[0]
    if not isinstance(x, torch.Tensor) or not isinstance(output, torch.Tensor):
        return None
    if x.dtype != torch.float32 or x.dim() < 2 or x.shape != output.shape:
        return None
    x = x.detach()
    if module.training or module.running_mean is None or module.running_var is None:
        dims = [d for d in range(x.dim()) if d != 1]
        var, mean = torch.var_mean(x, dim=dims, correction=0)
    else:
        mean, var = module.running_mean, module.running_var
    scale = torch.rsqrt(var + module.eps)
    if module.weight is not None:
        scale = scale * module.weight.detach()
    bias = torch.zeros_like(mean) if module.bias is None else module.bias.detach()
    return x, mean, scale, bias


def _hooks_alone(module: nn.Module) -> bool:
    """Whether the module has no hooks but the Monitor's (a pre-hook and a forward hook).

    Another hook could change the output, or a ReLU's input in place, so that
    a row made from the BatchNorm's input would no longer be the one eager
    mode reads.
    """
    return (
        len(module._forward_hooks) <= 1
        and len(module._forward_pre_hooks) <= 1
        and not (_module._global_forward_hooks or _module._global_forward_pre_hooks)
    )


class _Layout:
    """What one module's rows hold, as last traced (written inside the graph, read by `take`)."""

    paths: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[torch.dtype, ...] = ()
    kinds: tuple[Kind, ...] = ()


class _Probe(torch.autograd.Function):
    """Identity on ``x`` whose backward puts the gradient's row into ``sink``'s gradient."""

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


class TracedCollector:
    """Statistics of monitored modules while they run inside a compiled graph.

    Args:
        names: primary names of the monitored modules, in registration order.
        plans: activation `Plan` per module name.
        outputs: record output statistics (phase ``forward``).
        grads: record gradients w.r.t. outputs (phase ``backward``).
        device: where the model's tensors live (the buffers go there).
    """

    def __init__(
        self,
        names: list[str],
        plans: dict[str, Plan],
        *,
        outputs: bool,
        grads: bool,
        device: torch.device,
    ) -> None:
        self.names = names
        self.plans = plans
        self.outputs = outputs
        self.grads = grads
        self.index = {name: i for i, name in enumerate(names)}
        #: Rows as one extern op each (`hookscope.stats.rowop`) rather than tensor ops
        #: inductor fuses; None: extern on the CPU only. Benchmarks set it (and
        #: `reduce`) before the first compiled call to compare formulations.
        self.extern: bool | None = None
        #: Gradient rows as extern ops (None: as `extern`); benchmarks set it to compare.
        self.grad_extern: bool | None = None
        #: BatchNorm rows (and the next ReLU's) from the BatchNorm's input on the CPU
        #: (`_norm_parts`); benchmarks turn it off to compare.
        self.norm_from_input = True
        #: The tensor-op formulation of a forward row (`reduce_row`).
        self.reduce: RowFn = reduce_row
        self.layouts = [_Layout() for _ in names]
        rows = len(names) * SLOTS
        self.buffer = empty_rows(rows, device)
        #: An empty buffer: `take` copies it over `buffer` (one op, not `reset_rows`'s three).
        self._empty = self.buffer.clone()
        self.sink = torch.zeros(
            rows, len(GRAD_FIELDS), dtype=accumulator_dtype(device), device=device
        ).requires_grad_(grads)
        #: While tracing, the last BatchNorm's returned output and the spare row that
        #: holds the row of its ReLU (cleared by the next hook: no tensor outlives the graph).
        self._norm: tuple[torch.Tensor, int] | None = None
        #: The rows `take` last fetched, and the same as an index tensor on the device.
        self._used: tuple[int, ...] = ()
        self._used_index = torch.empty(0, dtype=torch.long, device=device)
        self._used_array = np.empty(0, dtype=np.intp)
        #: `_rows` as last built, and the layouts it was built from.
        self._rows_key: list[Any] = []
        self._rows_cache: list[tuple[int, tuple[str, str, tuple[int, ...], torch.dtype, Kind]]] = []
        #: Set inside the graph (a replayed attribute store) when it ran this step.
        self.used = False
        #: Whether a compiled graph ran in the step `take` last handed over.
        self.ran = False

    def on_forward(
        self, name: str, output: Any, module: nn.Module | None = None, args: tuple[Any, ...] = ()
    ) -> Any:
        """Traced forward hook body: merge output rows, probe gradients; the new output or None.

        Given the module and its ``args``, the row of an ``nn.ReLU``'s output is
        taken from its input (`_relu_input`), so that inductor need not store
        the output for the op.
        """
        i = self.index[name]
        found = tensors_in(output, "output")[:SLOTS]
        norm, self._norm = self._norm, None
        parts: Affine | None = None
        if self.outputs:
            plan = self.plans[name]
            parts = _norm_parts(module, args, output) if self.norm_from_input else None
            if parts is not None and (len(found) != 1 or not self._uses_extern(parts[0])):
                parts = None
            # a ReLU right after a BatchNorm (as in nn.Sequential): the BatchNorm's op made its row
            spare = None
            if (
                norm is not None
                and type(module) is nn.ReLU
                and len(args) == 1
                and _hooks_alone(module)
            ):
                spare = norm[1] if args[0] is norm[0] and len(found) == 1 else None
            source = _relu_input(module, args, output)
            for j, (_path, t) in enumerate(found):
                if parts is not None:
                    self._merge_affine(i * SLOTS, parts, plan, relu_index=(i + 1) * SLOTS - 1)
                elif spare is not None:
                    move_row_op(self.buffer, spare, i * SLOTS)
                elif source is not None and self._uses_extern(source):
                    self._merge(i * SLOTS + j, source.detach(), plan, relu=True)
                else:
                    self._merge(i * SLOTS + j, t.detach(), plan)
        layout = self.layouts[i]
        layout.paths = tuple(path for path, _ in found)
        layout.shapes = tuple(tuple(t.shape) for _, t in found)
        layout.dtypes = tuple(t.dtype for _, t in found)
        layout.kinds = tuple(kind_of(t) for _, t in found)
        self.used = True
        result = self._probed(output, found, i)
        if parts is not None:
            self._norm = (output if result is None else result, (i + 1) * SLOTS - 1)
        return result

    def _probed(self, output: Any, found: list[tuple[str, torch.Tensor]], i: int) -> Any:
        """``output`` with gradient probes on its tensors, or None without gradient rows."""
        if not (self.grads and torch.is_grad_enabled()):
            return None
        rows = {path: i * SLOTS + j for j, (path, _) in enumerate(found)}
        if isinstance(output, torch.Tensor):
            return self._probe(rows.get("output"), output)
        if type(output) in (tuple, list):
            return type(output)(
                self._probe(rows.get(f"output[{j}]"), t) for j, t in enumerate(output)
            )
        return None

    def _merge_affine(self, row: int, parts: Affine, plan: Plan, *, relu_index: int) -> None:
        """A BatchNorm's row from its input; the row of ``relu`` of its output into ``relu_index``.

        ``relu_index`` is the BatchNorm's last (spare) row: a ReLU called on the
        output next moves it into its own row (`move_row_op`); otherwise the
        next call of this BatchNorm replaces it, and `take` never reads it.
        """
        x, mean, scale, bias = parts
        zeros = plan.zeros != "none"
        affine_row_op(
            self.buffer, row, x, mean, scale, bias, plan.squares, plan.extrema, zeros, relu_index
        )

    def _uses_extern(self, t: torch.Tensor) -> bool:
        """Whether ``t``'s rows are extern ops (a constant while dynamo traces)."""
        return t.device.type == "cpu" if self.extern is None else self.extern

    def _merge(self, row: int, t: torch.Tensor, plan: Plan, *, relu: bool = False) -> None:
        if self._uses_extern(t):
            zeros = plan.zeros != "none"
            merge_row_op(self.buffer, row, t, plan.squares, plan.extrema, zeros, relu)
        else:
            self.buffer[row] = merge_row(self.buffer[row], self.reduce(t, plan, self.buffer.dtype))

    def _probe(self, row: int | None, t: Any) -> Any:
        if row is None or not isinstance(t, torch.Tensor):
            return t
        if not (t.requires_grad and t.is_floating_point()):
            return t
        extern = self._uses_extern(t) if self.grad_extern is None else self.grad_extern
        return _Probe.apply(t, self.sink, row, extern)

    def take(self) -> tuple[list[Entry], list[Entry]]:
        """This step's forward and backward entries (one host read each); empties the buffers."""
        self.ran = self.used
        if not self.used:
            return [], []
        self.used = False
        grad, self.sink.grad = self.sink.grad, None
        rows = self._rows()
        fwd_rows, bwd_rows = self._fetch(grad, [row for row, _ in rows])
        self.buffer.copy_(self._empty)
        fwd: list[Entry] = []
        bwd: list[Entry] = []
        for (_row, (name, path, shape, dtype, kind)), values in zip(rows, fwd_rows, strict=False):
            if values[0]:
                red = to_reduction(values, self.plans[name], kind)
                fwd.append(Entry("forward", [(name, path, True)], red, shape, dtype))
        for (_row, (name, path, shape, dtype, _kind)), values in zip(rows, bwd_rows, strict=False):
            if values[0]:
                red = grad_reduction(values)
                bwd.append(Entry("backward", [(name, path, True)], red, shape, dtype))
        bwd.reverse()  # backward runs in reverse order
        return fwd, bwd

    def _rows(self) -> list[tuple[int, tuple[str, str, tuple[int, ...], torch.dtype, Kind]]]:
        """The rows that hold a tensor's statistics, each with what it describes.

        Rebuilt only when a graph traced anew wrote other layouts: a replayed
        graph stores the same tuples each run.
        """
        key = [(lay.paths, lay.shapes, lay.dtypes, lay.kinds) for lay in self.layouts]
        if key != self._rows_key:
            self._rows_key = key
            self._rows_cache = [
                (i * SLOTS + j, (name, lay.paths[j], lay.shapes[j], lay.dtypes[j], lay.kinds[j]))
                for i, (name, lay) in enumerate(zip(self.names, self.layouts, strict=True))
                for j in range(len(lay.paths))
            ]
        return self._rows_cache

    def _fetch(
        self, grad: torch.Tensor | None, used: list[int]
    ) -> tuple[list[list[float]], list[list[float]]]:
        """Rows ``used`` of the forward buffer (if recorded) and of ``grad``, as host floats.

        Only rows that hold a tensor's statistics are turned into host floats
        (about one in `SLOTS` in a typical model). On the CPU through NumPy
        views (~5 µs; torch's ``cat``, ``index_select`` and ``cpu`` cost ~10
        µs each); elsewhere in one transfer.
        """
        parts = ([self.buffer] if self.outputs else []) + ([] if grad is None else [grad])
        if not parts or not used:
            return [], []
        width = len(FIELDS) if self.outputs else 0
        if parts[0].device.type == "cpu":
            if self._used != tuple(used):
                self._used = tuple(used)
                self._used_array = np.array(used, dtype=np.intp)
            both = [part.numpy()[self._used_array].tolist() for part in parts]
        else:
            if self._used != tuple(used):
                self._used = tuple(used)
                self._used_index = torch.tensor(used, device=parts[0].device)
            joined = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
            rows = joined.index_select(0, self._used_index).cpu().tolist()
            both = [[row[:width] for row in rows]] if width else []
            if grad is not None:
                both.append([row[width:] for row in rows])
        fwd_rows = both[0] if self.outputs else []
        bwd_rows = both[-1] if grad is not None else []
        return fwd_rows, bwd_rows
