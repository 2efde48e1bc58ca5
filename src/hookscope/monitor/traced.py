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
* gradients w.r.t. those outputs go through a probe
  (`hookscope.monitor.probes`), an identity whose backward records the
  gradient's row: on the CPU one extern op that adds it into `grad_rows`, a
  buffer outside the graph (`hookscope.stats.gradrow`); elsewhere tensor
  ops whose row is the gradient of ``sink``, a leaf that autograd
  accumulates in ``sink.grad`` like any parameter;
* what the rows hold (tensor paths, shapes, dtypes) is written to a plain
  object per module, an attribute store dynamo replays after each run without
  guarding on it.

`TracedCollector.take` reads the buffer and the gradient rows once per step and
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
from typing import Any, cast

import torch
from torch import nn

from hookscope.monitor.entries import Entry
from hookscope.monitor.probes import Probe, RowProbe
from hookscope.monitor.rowsources import Affine, hooks_alone, norm_parts, relu_input
from hookscope.stats import Plan, gradrow, kind_of, tensors_in
from hookscope.stats.reduction import Kind
from hookscope.stats.rowop import affine_row_op, merge_row_op, move_row_op
from hookscope.stats.traced import (
    FIELDS,
    GRAD_FIELDS,
    accumulator_dtype,
    empty_rows,
    grad_reduction,
    merge_row,
    reduce_row,
    to_reduction,
)

#: Tensors of one module output that get a row.
SLOTS = 8

#: ``(tensor, plan, accumulator dtype) -> row``: a forward row as tensor ops.
RowFn = Callable[[torch.Tensor, Plan, torch.dtype], torch.Tensor]


#: What one module's rows hold: the tensors' paths, shapes, dtypes and kinds.
Held = tuple[
    tuple[str, ...], tuple[tuple[int, ...], ...], tuple[torch.dtype, ...], tuple[Kind, ...]
]
#: One row of `TracedCollector._rows`: ``(row, (module, path, shape, dtype, kind))``.
RowInfo = tuple[int, tuple[str, str, tuple[int, ...], torch.dtype, Kind]]


class _Layout:
    """What one module's rows hold, as last traced (written inside the graph, read by `take`).

    One attribute, so that dynamo replays one store per module after each run.
    """

    held: Held = ((), (), (), ())


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
        #: Extern gradient rows added into `grad_rows` outside the graph (`hookscope.monitor.probes.RowProbe`)
        #: rather than handed back as ``sink``'s gradient; benchmarks turn it off to compare.
        self.grad_into = True
        #: BatchNorm rows (and the next ReLU's) from the BatchNorm's input on the CPU
        #: (`hookscope.monitor.rowsources.norm_parts`); benchmarks turn it off to compare.
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
        #: Where the extern gradient rows go (`hookscope.stats.gradrow`); whether a
        #: traced graph puts rows there (set while tracing, replayed each run).
        self.grad_rows = torch.zeros_like(self.sink, requires_grad=False)
        self._grad_key = gradrow.register(self.grad_rows)
        self.row_probed = False
        #: While tracing, the last BatchNorm's returned output and the spare row that
        #: holds the row of its ReLU (cleared by the next hook: no tensor outlives the graph).
        self._norm: tuple[torch.Tensor, int] | None = None
        #: The rows `take` last fetched, and (off the CPU) the same as an index tensor.
        self._used: list[RowInfo] | None = None
        self._used_index = torch.empty(0, dtype=torch.long, device=device)
        #: Where each used row starts in `_flat`'s forward and gradient views.
        self._starts: tuple[list[int], list[int]] = ([], [])
        #: `_rows` as last built, and the layouts it was built from.
        self._rows_key: list[Held] = []
        self._rows_cache: list[RowInfo] = []
        #: Flat float views of the CPU buffers (the same memory for the Monitor's life):
        #: `buffer`, `grad_rows`, the empty buffer, zeros the size of `grad_rows`.
        self._flat = (
            (_flat(self.buffer), _flat(self.grad_rows), _flat(self._empty),
             _flat(torch.zeros_like(self.grad_rows)))
            if device.type == "cpu" else None
        )  # fmt: skip
        #: Set inside the graph (a replayed attribute store) when it ran this step.
        self.used = False
        #: Whether a compiled graph ran in the step `take` last handed over.
        self.ran = False

    def on_forward(
        self, name: str, output: Any, module: nn.Module | None = None, args: tuple[Any, ...] = ()
    ) -> Any:
        """Traced forward hook body: merge output rows, probe gradients; the new output or None.

        Given the module and its ``args``, the row of an ``nn.ReLU``'s output is
        taken from its input (`hookscope.monitor.rowsources.relu_input`), so that inductor need not store
        the output for the op.
        """
        i = self.index[name]
        found = tensors_in(output, "output")[:SLOTS]
        norm, self._norm = self._norm, None
        parts: Affine | None = None
        if self.outputs:
            plan = self.plans[name]
            parts = norm_parts(module, args, output) if self.norm_from_input else None
            if parts is not None and (len(found) != 1 or not self._uses_extern(parts[0])):
                parts = None
            # a ReLU right after a BatchNorm (as in nn.Sequential): the BatchNorm's op made its row
            spare = None
            if (
                norm is not None
                and type(module) is nn.ReLU
                and len(args) == 1
                and hooks_alone(module)
            ):
                spare = norm[1] if args[0] is norm[0] and len(found) == 1 else None
            source = relu_input(module, args, output)
            for j, (_path, t) in enumerate(found):
                if parts is not None:
                    self._merge_affine(i * SLOTS, parts, plan, relu_index=(i + 1) * SLOTS - 1)
                elif spare is not None:
                    move_row_op(self.buffer, spare, i * SLOTS)
                elif source is not None and self._uses_extern(source):
                    self._merge(i * SLOTS + j, source.detach(), plan, relu=True)
                else:
                    self._merge(i * SLOTS + j, t.detach(), plan)
        self.layouts[i].held = (
            tuple(path for path, _ in found),
            tuple(tuple(t.shape) for _, t in found),
            tuple(t.dtype for _, t in found),
            tuple(kind_of(t) for _, t in found),
        )
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
        if extern and self.grad_into:
            self.row_probed = True
            return RowProbe.apply(t, self._grad_key, row)
        return Probe.apply(t, self.sink, row, extern)

    def take(self) -> tuple[list[Entry], list[Entry]]:
        """This step's forward and backward entries (one host read each); empties the buffers."""
        self.ran = self.used
        if not self.used:
            return [], []
        self.used = False
        grad = self._grads()
        rows = self._rows()
        fwd_rows, bwd_rows = self._fetch(grad, rows)
        if self._flat is not None:  # memcpy: torch's copy_ and zero_ ~5 µs each
            self._flat[0][:] = self._flat[2]
            if grad is not None:
                self._flat[1][:] = self._flat[3]
        else:
            self.buffer.copy_(self._empty)
            if grad is not None:
                self.grad_rows.zero_()
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

    def _grads(self) -> torch.Tensor | None:
        """This step's gradient rows, or None when no backward reached a probe.

        Tensor-op probes leave theirs in ``sink.grad``, extern ones in
        ``grad_rows`` (rows of no backward stay empty: `take` skips them).
        """
        summed, self.sink.grad = self.sink.grad, None
        if not self.row_probed:
            return summed
        return self.grad_rows if summed is None else summed + self.grad_rows

    def close(self) -> None:
        """Stop the extern gradient ops writing rows (a graph may outlive the Monitor)."""
        gradrow.unregister(self._grad_key)

    def _rows(self) -> list[RowInfo]:
        """The rows that hold a tensor's statistics, each with what it describes.

        Rebuilt only when a graph traced anew wrote other layouts: a replayed
        graph stores the same tuples each run.
        """
        key = [lay.held for lay in self.layouts]
        if key != self._rows_key:
            self._rows_key = key
            self._rows_cache = [
                (i * SLOTS + j, (name, paths[j], shapes[j], dtypes[j], kinds[j]))
                for i, (name, (paths, shapes, dtypes, kinds)) in enumerate(
                    zip(self.names, key, strict=True)
                )
                for j in range(len(paths))
            ]
        return self._rows_cache

    def _fetch(
        self, grad: torch.Tensor | None, used: list[RowInfo]
    ) -> tuple[list[list[float]], list[list[float]]]:
        """The ``used`` rows of the forward buffer (if recorded) and of ``grad``, as host floats.

        Only rows that hold a tensor's statistics are turned into host floats
        (about one in `SLOTS` in a typical model). On the CPU as slices of flat
        memoryviews: right after a compiled step, with the caches cold, NumPy's
        fancy index and ``tolist`` took 70-80 µs for two buffers, torch's
        ``cat``, ``index_select`` and ``cpu`` more; elsewhere in one transfer.
        """
        parts = ([self.buffer] if self.outputs else []) + ([] if grad is None else [grad])
        if not parts or not used:
            return [], []
        fresh = used is not self._used  # `_rows` hands back the same list until the layouts change
        self._used = used
        if self._flat is not None:
            if fresh:
                self._starts = (
                    [row * len(FIELDS) for row, _ in used],
                    [row * len(GRAD_FIELDS) for row, _ in used],
                )
            fwd_rows = _slices(self._flat[0], self._starts[0], len(FIELDS)) if self.outputs else []
            if grad is None:
                return fwd_rows, []
            flat = self._flat[1] if grad is self.grad_rows else _flat(grad.contiguous())
            return fwd_rows, _slices(flat, self._starts[1], len(GRAD_FIELDS))
        if fresh:
            self._used_index = torch.tensor([row for row, _ in used], device=parts[0].device)
        width = len(FIELDS) if self.outputs else 0
        joined = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
        rows = joined.index_select(0, self._used_index).cpu().tolist()
        fwd_rows = [row[:width] for row in rows] if width else []
        bwd_rows = [row[width:] for row in rows] if grad is not None else []
        return fwd_rows, bwd_rows


def _flat(t: torch.Tensor) -> memoryview[float]:
    """A contiguous CPU float64 tensor's memory as one flat ``memoryview`` of floats."""
    return t.numpy().data.cast("B").cast("d")


def _slices(flat: memoryview[float], starts: list[int], width: int) -> list[list[float]]:
    """The rows of ``width`` floats that start at ``starts`` in ``flat``."""
    rows = [flat[start : start + width].tolist() for start in starts]
    return cast("list[list[float]]", rows)  # typeshed types every memoryview.tolist as ints
