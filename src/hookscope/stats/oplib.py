"""hookscope's torch operators (``hookscope::...``): one library, defined once per process.

`hookscope.stats.rowop` and `hookscope.stats.gradrow` define their ops when
imported. A Ctrl-C during such an import drops the module from
``sys.modules`` while the dispatcher keeps what it had registered; importing
it again used to fail ("Tried to register an operator ... multiple times",
"Only a single TORCH_LIBRARY can be used to register the namespace
hookscope") and broke every later Monitor in the process. Here one
``Library`` fragment, held by this module, gets every definition; `define`
skips an op that exists, and a kernel registered again (by the module
imported anew, whose globals are the live ones) replaces the old kernel
without PyTorch's override warning.

`twin` defines the Python twin that a C++ kernel of `hookscope.stats.cpuops`
hands the calls it does not take to. `on_cpu_trace` inverts the dependency
on `hookscope.stats.cpuops`: the ops' fake kernels call `traced_on_cpu`,
which runs what cpuops registered (its ``ensure``), so the op modules never
import it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from hookscope._interrupts import critical

__all__ = ["define", "fake", "impl", "on_cpu_trace", "traced_on_cpu", "twin", "twin_name"]

NAMESPACE = "hookscope"
LIB = torch.library.Library(NAMESPACE, "FRAGMENT")
#: ``(op, dispatch key)`` pairs that have a kernel from this process.
_IMPLS: set[tuple[str, str]] = set()
_lock = threading.Lock()
#: Run by `traced_on_cpu` (`hookscope.stats.cpuops` puts its ``ensure`` here).
_CPU_TRACE: list[Callable[[], object]] = []


def _exists(name: str) -> bool:
    return hasattr(getattr(torch.ops, NAMESPACE), name)


@critical
def define(schema: str, *, tags: Sequence[torch.Tag] = ()) -> None:
    """Define ``hookscope::<schema>`` unless it is defined already."""
    with _lock:
        if not _exists(schema.partition("(")[0]):
            LIB.define(schema, tags=tuple(tags))


@critical
def impl(name: str, kernel: Callable[..., Any], key: str = "CompositeExplicitAutograd") -> None:
    """Make ``kernel`` ``hookscope::name``'s kernel for ``key`` (replacing an earlier one)."""
    with _lock:
        if (name, key) not in _IMPLS:
            LIB.impl(name, kernel, key)
            _IMPLS.add((name, key))
            return
        with warnings.catch_warnings():  # "Overriding a previously registered kernel"
            warnings.simplefilter("ignore")
            LIB.impl(name, kernel, key)


@critical
def fake(name: str, kernel: Callable[..., Any]) -> None:
    """``kernel`` computes ``hookscope::name``'s output metadata under fake tensors."""
    torch.library.register_fake(f"{NAMESPACE}::{name}", kernel, lib=LIB)


def twin_name(name: str) -> str:
    """The op a C++ kernel hands ``hookscope::name``'s calls to: ``merge_row_`` -> ``merge_row_py_``."""
    return f"{name[:-1]}_py_" if name.endswith("_") else f"{name}_py"


def twin(name: str, kernel: Callable[..., None]) -> None:
    """Define ``hookscope::name``'s twin (same schema), with ``kernel`` as its kernel.

    ``_ops.cpp`` calls the twin, through the dispatcher, with the arguments it
    did not take: ``kernel`` is the op's own Python kernel.
    """
    schema = str(getattr(torch.ops.hookscope, name).default._schema)
    define(schema.replace(f"{NAMESPACE}::{name}(", f"{twin_name(name)}(", 1))
    impl(twin_name(name), kernel)


def on_cpu_trace(fn: Callable[[], object]) -> None:
    """Run ``fn()`` whenever an op is traced with CPU tensors (once per ``fn``)."""
    if fn not in _CPU_TRACE:
        _CPU_TRACE.append(fn)


def traced_on_cpu() -> None:
    """Called by the ops' fake kernels for CPU tensors."""
    for fn in _CPU_TRACE:
        fn()
