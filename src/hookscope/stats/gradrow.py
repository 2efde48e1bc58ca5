"""Gradient rows merged into a buffer kept outside the compiled graph: ``hookscope::grad_row_add``.

A compiled Monitor's gradient probe (`hookscope.monitor.traced`) must leave
something in the backward graph that autograd keeps. The other way, each
probe's ``grad_rows`` making a fresh ``(rows, 4)`` tensor of zeros but for
its row, handed back as the gradient of a leaf ``sink`` that autograd sums
into ``sink.grad`` (what devices other than the CPU do), costs more than the
row itself for small gradients: 3-17 µs a call in a real step (the
allocator and fresh pages, just after the backward's large kernels), ten
calls a SmallCNN step.

``grad_row_add(g, key, index)`` instead adds ``g``'s row (`GRAD_FIELDS`)
into row ``index`` of a buffer that `register` made known under ``key``, and
returns nothing: it is registered as having a side effect
(``torch.fx.node.has_side_effect``), so neither AOT autograd's partitioner
nor inductor drops it although no value of the graph depends on it. No
tensor is made per call, no gradient is summed, no leaf accumulates one.
(An op whose result is an *empty* tensor is dropped by inductor; one that
returns a shared zero would hand inductor buffers that alias each other.)
What the op returns is not part of inductor's cache key for the backward
graph (the custom op's fake is not hashed): changing it needs a new op name
or a graph whose code differs, or a cached graph compiled for the old one
is run.

Rows add as ``sink.grad`` did: sizes, sums of squares, NaN and Inf counts
are sums, so a module called twice, or two backwards before ``take``, give
the same sums, in call order.

On the CPU the C kernel adds the row into the buffer by address
(``hs_grad_row_add``); a NaN or Inf in ``g``, other devices and other
buffers take `hookscope.stats.traced.grad_row`'s tensor ops, counted
exactly. A key that is no longer registered (a Monitor closed while its
graph still runs) writes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

from hookscope.stats import native, oplib
from hookscope.stats.traced import GRAD_FIELDS, grad_row

__all__ = ["grad_row_add_op", "register", "unregister"]

oplib.define("grad_row_add(Tensor g, int key, int index) -> ()", tags=(torch.Tag.flexible_layout,))

#: key -> a ``(rows, len(GRAD_FIELDS))`` buffer the op adds rows into.
_BUFFERS: dict[int, torch.Tensor] = {}
#: key -> ``(address of row 0, row stride in bytes, rows)`` for the kernel (float64 CPU buffers).
#: Found once at `register` rather than by `hookscope.stats.rowop`'s per-call checks of the
#: buffer (``_kernel_for``): those cost 1.5-3 µs more a call here, ten calls a SmallCNN step.
_ADDRESSES: dict[int, tuple[int, int, int]] = {}
_KEYS = itertools.count()
#: Told of every buffer registered (``(key, (address, row stride in float64s, rows))``) and
#: forgotten (``(key, None)``); `hookscope.stats.cpuops` mirrors them into its C++ kernels.
WATCHERS: list[Callable[[int, tuple[int, int, int] | None], None]] = []


def places() -> dict[int, tuple[int, int, int]]:
    """Every registered float64 CPU buffer: ``key -> (address, row stride in float64s, rows)``."""
    return {key: (a, stride // 8, rows) for key, (a, stride, rows) in list(_ADDRESSES.items())}


def register(buffer: torch.Tensor) -> int:
    """Make ``buffer`` (``(rows, len(GRAD_FIELDS))``) known to the op; the key to pass it.

    The buffer must stay where it is (no resize) while registered.
    """
    if buffer.dim() != 2 or buffer.shape[1] != len(GRAD_FIELDS):
        raise ValueError(f"a gradient buffer is (rows, {len(GRAD_FIELDS)}), got {buffer.shape}")
    key = next(_KEYS)
    _BUFFERS[key] = buffer
    if buffer.is_cpu and buffer.dtype == torch.float64 and buffer.is_contiguous():
        _ADDRESSES[key] = (buffer.data_ptr(), buffer.stride(0) * 8, buffer.shape[0])
        for watch in WATCHERS:
            watch(key, (buffer.data_ptr(), buffer.stride(0), buffer.shape[0]))
    return key


def unregister(key: int) -> None:
    """Forget ``key``'s buffer: the op then writes nothing for it."""
    _BUFFERS.pop(key, None)
    _ADDRESSES.pop(key, None)
    for watch in WATCHERS:
        watch(key, None)


def _grad_row_add(g: torch.Tensor, key: int, index: int) -> None:
    """Add ``g``'s gradient row into row ``index`` of ``key``'s buffer."""
    if not g.numel():  # its row is all zeros
        return
    place = _ADDRESSES.get(key)
    if place is not None and 0 <= index < place[2]:
        got = native.loaded()
        if got is not None and native.takes(g):
            lib, codes = got
            address = place[0] + index * place[1]
            threads = torch.get_num_threads()
            if lib.hs_grad_row_add(codes[g.dtype], g.data_ptr(), g.numel(), threads, address) == 0:
                return
    buffer = _BUFFERS.get(key)
    if buffer is not None:
        buffer[index] += grad_row(g.detach(), buffer.dtype).to(buffer.device)


def _grad_row_add_fake(g: torch.Tensor, key: int, index: int) -> None:
    """Nothing to make: the op only writes outside the graph; on the CPU, `cpuops.ensure`."""
    if g.device.type == "cpu":
        oplib.traced_on_cpu()


oplib.impl("grad_row_add", _grad_row_add)
oplib.twin("grad_row_add", _grad_row_add)  # for what the C++ kernel does not take
oplib.fake("grad_row_add", _grad_row_add_fake)

#: ``(g, key, index) -> None``: adds ``g``'s `GRAD_FIELDS` row into row
#: ``index`` of the buffer `register` returned ``key`` for.
grad_row_add_op = torch.ops.hookscope.grad_row_add.default
torch.fx.node.has_side_effect(grad_row_add_op)  # kept in graphs that do not use a result of it
