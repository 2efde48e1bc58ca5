"""A statistics row as one graph node: the ``hookscope::merge_row_`` and ``grad_rows`` ops.

Written as tensor ops (`hookscope.stats.traced.reduce_row`), the row of one
output is about a dozen graph nodes that inductor fuses into the kernels
making the output. On CPU that fusion is what costs (SmallCNN training
step, see the "Monitor on a compiled model" section of benchmarks/README.md):
the extra reductions over BatchNorm and ReLU outputs change the schedule of
the conv → BatchNorm → ReLU → MaxPool kernel, and the dozen nodes per row
are most of the C++ inductor generates and compiles at warm-up.

As a ``torch.library`` custom op the row is one node. Inductor does not look
inside it: it hands the op a stored tensor and calls it as an extern kernel,
so the model's own kernels are scheduled as without hookscope, apart from
storing that tensor. On the CPU the op reduces a dense floating tensor in
one pass of hookscope's C kernel (`hookscope.stats.native`); everything else
(other devices, integer, bool and complex tensors, NaN or Inf in the
tensor, no C compiler) runs `reduce_row`'s tensor ops eagerly, on the
tensor's own device and without a host read. A fake (meta) implementation
lets dynamo and inductor trace it; ``fullgraph=True`` works. ``grad_rows``
does the same for a gradient row (`GRAD_FIELDS`) in a fresh tensor (the
compiled Monitor's CPU default adds them into a buffer instead,
`hookscope.stats.gradrow`); ``move_row_`` is one call of the C kernel. The
Python kernels below run where `hookscope.stats.cpuops` has not registered
its C++ CPU kernels, which call the same C entries without a Python frame
and hand everything else back to these.

Reading a tensor makes inductor store it. A BatchNorm's output, and the
ReLU's after it, are otherwise never stored: the next pooling loop
recomputes them from the convolution output that the backward keeps anyway.
``affine_row_`` therefore takes that input with the per-channel mean, scale
and bias and reduces the output from it in one pass of the C kernel, which
makes the output a block at a time in a small buffer
(`native.moments_affine`), with the ReLU's row from the same pass put in a
spare row; ``move_row_`` merges the spare row into the ReLU's own when the
ReLU runs (SmallCNN training step: 2.2-2.4x the compiled step → 1.4x).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable

import torch

from hookscope.stats import native, oplib
from hookscope.stats.reduce import Plan, Zeros
from hookscope.stats.traced import (
    FIELDS,
    GRAD_FIELDS,
    empty_rows,
    grad_row,
    merge_row,
    reduce_row,
)

__all__ = [
    "affine_row_op",
    "grad_row_values",
    "grad_rows_op",
    "merge_row_op",
    "move_row_op",
    "relu_row_values",
    "row_values",
]

_ZEROS: tuple[Zeros, Zeros] = ("none", "count")
_CALLS, _MIN, _MAX = FIELDS.index("calls"), FIELDS.index("min"), FIELDS.index("max")
#: A row with nothing merged in (`empty_rows`).
_EMPTY = empty_rows(1)[0].tolist()
# `_values` writes rows in this order
assert FIELDS == ("calls", "numel", "sum", "sumsq", "min", "max", "nonzero", "nan", "inf")
#: The ops, defined through ``torch.library.Library`` rather than ``custom_op``:
#: a call then costs ~2 µs of dispatch instead of ~17 µs (20 calls a SmallCNN step).
#: Inductor may hand the ops a tensor in any memory order (the C kernel reads
#: any dense layout) instead of copying a channels-last output to NCHW first.
_TAGS = (torch.Tag.flexible_layout,)
oplib.define(
    "merge_row_(Tensor(a!) rows, int index, Tensor x, bool squares, bool extrema, bool zeros, "
    "bool relu=False) -> ()",
    tags=_TAGS,
)
oplib.define("grad_rows(Tensor g, int index, int rows, ScalarType dtype) -> Tensor", tags=_TAGS)
oplib.define(
    "affine_row_(Tensor(a!) rows, int index, Tensor x, Tensor mean, Tensor scale, Tensor bias, "
    "bool squares, bool extrema, bool zeros, int relu_index=-1) -> ()",
    tags=_TAGS,
)
oplib.define("move_row_(Tensor(a!) rows, int source, int index) -> ()")


def _merge_row_(
    rows: torch.Tensor,
    index: int,
    x: torch.Tensor,
    squares: bool,
    extrema: bool,
    zeros: bool,
    relu: bool = False,
) -> None:
    """Merge the row of ``x`` (``relu(x)`` with ``relu``) into ``rows[index]`` in place.

    ``squares``, ``extrema`` and ``zeros`` are the `Plan` fields.
    """
    if not x.numel():  # only the call counts (aminmax of nothing would raise)
        rows[index, _CALLS] += 1
        return
    if _kernel_merge(rows, index, x, relu):
        return
    values = None
    if rows.is_cpu:
        values = relu_row_values(x) if relu else row_values(x)
    if values is None:
        if relu:
            x = torch.relu(x)
        plan = Plan(squares=squares, extrema=extrema, zeros=_ZEROS[zeros])
        rows[index] = merge_row(rows[index], reduce_row(x, plan, rows.dtype))
        return
    _merge_values(rows, index, values)


def _merge_values(rows: torch.Tensor, index: int, values: list[float]) -> None:
    """Merge a host row into ``rows[index]`` (a CPU buffer) in place."""
    row = rows.numpy()[index]  # a view: ~2 µs a merge instead of ~5 through tensor ops
    old = row.tolist()
    merged = [a + b for a, b in zip(old, values, strict=True)]
    merged[_MIN], merged[_MAX] = min(old[_MIN], values[_MIN]), max(old[_MAX], values[_MAX])
    row[:] = merged


def _affine_row_(
    rows: torch.Tensor,
    index: int,
    x: torch.Tensor,
    mean: torch.Tensor,
    scale: torch.Tensor,
    bias: torch.Tensor,
    squares: bool,
    extrema: bool,
    zeros: bool,
    relu_index: int = -1,
) -> None:
    """Merge the row of ``y = (x - mean) * scale + bias`` (per channel, dim 1) into ``rows[index]``.

    With ``relu_index >= 0`` the row of ``relu(y)`` replaces ``rows[relu_index]``,
    from the same pass. Where the kernel takes ``x`` (`native.moments_affine`)
    it reads ``x`` once and never makes ``y``; otherwise, or when ``y`` holds
    a NaN or Inf, ``y`` is made in a scratch tensor kept per thread and shape
    (no fresh pages each call) and reduced as any other tensor.
    """
    relu = relu_index >= 0
    if _kernel_affine(rows, index, x, (mean, scale, bias), relu_index):
        return
    got = (
        native.moments_affine(x, mean, scale, bias, relu=relu)
        if rows.is_cpu and x.numel()
        else None
    )
    if got is not None and _finite(got):
        _merge_values(rows, index, _values(got[0]))
        if got[1] is not None:
            rows.numpy()[relu_index] = _values(got[1])
        return
    shape = [1] * x.dim()
    shape[1] = -1
    y = _scratch(x)
    torch.sub(x, mean.view(shape), out=y)  # three passes: addcmul broadcasts ~3x slower
    y.mul_(scale.view(shape))
    y.add_(bias.view(shape))
    if relu_index < 0:
        _merge_row_(rows, index, y, squares, extrema, zeros)
        return
    both = native.moments_relu(y) if rows.is_cpu and y.numel() else None
    if both is None or not _finite(both):
        rows[relu_index] = empty_rows(1, rows.device)[0]
        _merge_row_(rows, index, y, squares, extrema, zeros)
        _merge_row_(rows, relu_index, y, squares, extrema, zeros, relu=True)
        return
    _merge_values(rows, index, _values(both[0]))
    rows.numpy()[relu_index] = _values(both[1])


def _finite(got: tuple[native.Moments, native.Moments | None]) -> bool:
    """Whether the kernel's sums are finite (else the tensor holds a NaN or Inf)."""
    return all(
        math.isfinite(v) for m in got if m is not None for v in (m.shifted_sum, m.shifted_sumsq)
    )


def _move_row_(rows: torch.Tensor, source: int, index: int) -> None:
    """Merge ``rows[source]`` into ``rows[index]`` and empty ``rows[source]``."""
    if not rows.is_cpu:
        rows[index] = merge_row(rows[index], rows[source])
        rows[source] = empty_rows(1, rows.device)[0]
        return
    got = native.loaded() if KERNEL_ROWS else None
    to, source_address = _row_address(rows, index), _row_address(rows, source)
    if got is not None and to is not None and source_address is not None and to != source_address:
        got[0].hs_move_row(source_address, to)  # the same merge, without NumPy views (~40 µs cold)
        return
    view = rows.numpy()
    _merge_values(rows, index, view[source].tolist())
    view[source] = _EMPTY


#: Rows written by the C kernel straight into the buffer (``hs_merge_row``,
#: ``hs_grad_row``, ``hs_affine_row``): no result objects and no NumPy view per
#: call, the same values bit for bit. False: the Python path (benchmarks compare;
#: set it with `set_kernel_rows`, which also routes the C++ kernels to it).
KERNEL_ROWS = True
#: Told of `set_kernel_rows` (`hookscope.stats.cpuops` turns its C++ kernels off and on).
SWITCHES: list[Callable[[bool], None]] = []


def set_kernel_rows(on: bool) -> None:
    """`KERNEL_ROWS`, with the C++ kernels (`cpuops`) off while it is False, on again with True."""
    global KERNEL_ROWS
    KERNEL_ROWS = on
    for switch in SWITCHES:
        switch(on)


def _row_address(rows: torch.Tensor, index: int) -> int | None:
    """The address of ``rows[index]`` for the kernel: a float64 CPU buffer, ``index`` in range."""
    if not (rows.dtype == torch.float64 and rows.is_cpu and rows.is_contiguous()):
        return None
    if not 0 <= index < rows.shape[0]:
        return None
    return rows.data_ptr() + index * rows.stride(0) * 8


def _kernel_for(
    rows: torch.Tensor, index: int, x: torch.Tensor
) -> tuple[ctypes.CDLL, int, int] | None:
    """The loaded kernel, ``x``'s type code and ``rows[index]``'s address, where the kernel applies."""
    got = native.loaded() if KERNEL_ROWS else None
    if got is None or not x.numel() or not native.takes(x):
        return None
    address = _row_address(rows, index)
    if address is None:
        return None
    lib, codes = got
    return lib, codes[x.dtype], address


def _kernel_merge(rows: torch.Tensor, index: int, x: torch.Tensor, relu: bool) -> bool:
    """`_merge_row_` by the C kernel, into the buffer itself; False where it does not apply."""
    target = None if relu and x.dtype != torch.float32 else _kernel_for(rows, index, x)
    if target is None:
        return False
    lib, code, address = target
    threads = torch.get_num_threads()
    return lib.hs_merge_row(code, x.data_ptr(), x.numel(), threads, relu, address) == 0


def _kernel_grad(out: torch.Tensor, index: int, g: torch.Tensor) -> bool:
    """`_grad_rows`' row by the C kernel, into ``out[index]``; False where it does not apply."""
    target = _kernel_for(out, index, g)
    if target is None:
        return False
    lib, code, address = target
    return lib.hs_grad_row(code, g.data_ptr(), g.numel(), torch.get_num_threads(), address) == 0


def _kernel_affine(
    rows: torch.Tensor,
    index: int,
    x: torch.Tensor,
    params: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    relu_index: int,
) -> bool:
    """`_affine_row_` by the C kernel, into the buffer itself; False where it does not apply.

    The same conditions as `native.moments_affine`, which it replaces here.
    """
    target = None if x.dtype != torch.float32 or x.dim() < 2 else _kernel_for(rows, index, x)
    if target is None:
        return False
    channels = x.shape[1]
    if any(t.dtype != torch.float32 or not t.is_cpu or t.numel() != channels for t in params):
        return False
    lib, _, address = target
    relu = relu_index >= 0
    spare = _row_address(rows, relu_index) if relu else 0
    if spare is None or spare == address:
        return False
    mean, scale, bias = (t.contiguous() for t in params)
    stride = x.stride(1) if channels > 1 else 1  # a size-1 dim's stride may be anything
    failed = lib.hs_affine_row(
        x.data_ptr(),
        x.numel(),
        stride,
        channels,
        mean.data_ptr(),
        scale.data_ptr(),
        bias.data_ptr(),
        relu,
        torch.get_num_threads(),
        address,
        spare,
    )
    return failed == 0


_SCRATCH = threading.local()


def _scratch(x: torch.Tensor) -> torch.Tensor:
    """An uninitialised tensor like ``x`` (same strides), reused by later calls on this thread."""
    cache: dict[tuple[object, ...], torch.Tensor] = _SCRATCH.__dict__.setdefault("tensors", {})
    key = (x.shape, x.stride(), x.dtype, x.device)
    got = cache.get(key)
    if got is None:
        got = cache[key] = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    return got


def _merge_row_fake(rows: torch.Tensor, *_args: object, **_kwargs: object) -> None:
    """``merge_row_`` only writes into ``rows``: under fake tensors there is nothing to make.

    Tracing a row op on the CPU is when the C++ kernels are registered (`cpuops.ensure`).
    """
    if rows.device.type == "cpu":
        oplib.traced_on_cpu()


def _grad_rows(g: torch.Tensor, index: int, rows: int, dtype: torch.dtype) -> torch.Tensor:
    """A ``(rows, len(GRAD_FIELDS))`` tensor of zeros but for ``g``'s gradient row at ``index``."""
    out = torch.zeros(rows, len(GRAD_FIELDS), dtype=dtype, device=g.device)
    if _kernel_grad(out, index, g):
        return out
    values = grad_row_values(g) if out.is_cpu else None
    if values is None:
        out[index] = grad_row(g, dtype)
    else:
        out.numpy()[index] = values
    return out


def _grad_rows_fake(g: torch.Tensor, index: int, rows: int, dtype: torch.dtype) -> torch.Tensor:
    return g.new_empty(rows, len(GRAD_FIELDS), dtype=dtype)


# One Python kernel for every device: the C kernel on the CPU, tensor ops elsewhere (once
# `cpuops.ensure` has run, C++ kernels on the CPU, handing the rest to the twins' Python ones).
oplib.impl("merge_row_", _merge_row_)
oplib.impl("grad_rows", _grad_rows)
oplib.impl("affine_row_", _affine_row_)
oplib.fake("affine_row_", _merge_row_fake)
oplib.impl("move_row_", _move_row_)
for _name, _kernel in (("merge_row_", _merge_row_), ("affine_row_", _affine_row_)):
    oplib.twin(_name, _kernel)
oplib.twin("move_row_", _move_row_)
oplib.fake("move_row_", _merge_row_fake)
oplib.fake("merge_row_", _merge_row_fake)
oplib.fake("grad_rows", _grad_rows_fake)

#: Merges ``x``'s row into ``rows[index]``: ``(rows, index, x, squares, extrema, zeros,
#: relu=False) -> None``; with ``relu`` the row is ``relu(x)``'s.
merge_row_op = torch.ops.hookscope.merge_row_.default
#: ``(g, index, rows, dtype) -> (rows, len(GRAD_FIELDS))`` zeros but for ``g``'s row at ``index``.
grad_rows_op = torch.ops.hookscope.grad_rows.default
#: ``(rows, index, x, mean, scale, bias, squares, extrema, zeros, relu_index=-1) -> None``:
#: merges the row of ``y = (x - mean) * scale + bias`` (per channel along dim 1) into
#: ``rows[index]``, and with ``relu_index >= 0`` puts ``relu(y)``'s row in ``rows[relu_index]``
#: (replacing it): a BatchNorm's output, and a ReLU's after it, from the BatchNorm's input.
affine_row_op = torch.ops.hookscope.affine_row_.default
#: ``(rows, source, index) -> None``: merges ``rows[source]`` into ``rows[index]``, empties
#: ``rows[source]``.
move_row_op = torch.ops.hookscope.move_row_.default


def row_values(x: torch.Tensor) -> list[float] | None:
    """The forward row (`FIELDS`) of ``x`` from one pass of the C kernel, as host floats.

    Every field is filled (the kernel takes them all in the one pass). Same
    values as `reduce_row` up to summation order: the kernel sums ``x -
    shift`` (``shift`` its first finite element), turned back into sums of
    ``x`` in float64. None where the kernel does not apply (not a dense
    float CPU tensor, empty, no C compiler) or the tensor holds a NaN or Inf
    (the sums show it; `reduce_row` then counts them exactly).
    """
    got = native.moments(x) if x.is_floating_point() and x.numel() else None
    if got is None or not (math.isfinite(got.shifted_sum) and math.isfinite(got.shifted_sumsq)):
        return None
    return _values(got)


def relu_row_values(x: torch.Tensor) -> list[float] | None:
    """`row_values` of ``relu(x)`` from one pass over ``x`` (float32), without making ``relu(x)``.

    For an ``nn.ReLU``'s output: inductor then need not store that output for
    the op (it computes it inside the next kernel, e.g. a pooling loop).
    None where `hookscope.stats.native.moments_relu` does not apply (not a
    dense float32 CPU tensor) or ``x`` holds a NaN or Inf.
    """
    got = native.moments_relu(x) if x.dtype == torch.float32 and x.numel() else None
    if got is None or not _finite(got):
        return None
    return _values(got[1])


def _values(got: native.Moments) -> list[float]:
    """A row (`FIELDS`) from the kernel's moments of a finite tensor (no NaN, no Inf)."""
    return [1.0, float(got.n), got.sum, got.sumsq, got.min, got.max, got.nonzero, 0.0, 0.0]


def grad_row_values(g: torch.Tensor) -> list[float] | None:
    """The gradient row (`GRAD_FIELDS`) of ``g`` from one pass of the C kernel, as host floats.

    None where the kernel does not apply or ``g`` holds a NaN or Inf (`grad_row` counts them).
    """
    got = native.moments(g, 0.0) if g.is_floating_point() and g.numel() else None
    if got is None or not math.isfinite(got.shifted_sumsq):
        return None
    return [float(got.n), got.sumsq, 0.0, 0.0]
