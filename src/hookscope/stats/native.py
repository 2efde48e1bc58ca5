"""One-pass statistics of CPU tensors through a small C kernel (``_kernel.c``).

Eager PyTorch reads a tensor three times for sum, sum of squares and min/max
(plus once more for a zero count); the kernel reads it once and returns all
five. Tensors of 128 Ki elements and more are split among helper threads (up to
``torch.get_num_threads()`` in all) that the caller never waits for unless
they have started. Helpers are invited only for cores no thread is waiting
for (Linux's count of runnable threads, ``/proc/loadavg``): where other
processes, or torch's own OpenMP threads, keep every core busy, a helper
would only displace the caller, so the caller reads the tensor alone.
Where torch runs on the libgomp it ships, the kernel is built with OpenMP
against that runtime and torch's own intra-op workers take the parts instead
(`_flag_sets`); they are awake right after every torch op, where a sleeping
helper would first have to be woken.
``$HOOKSCOPE_KERNEL_HELPERS`` sets the policy: ``auto`` (that rule, the
default), ``always`` or ``never``. `moments_relu` also returns the statistics of
``relu(x)`` from the same pass (the Monitor uses it so that a ReLU's output
is not read again). On a 2-core CPU that takes the Monitor's overhead on
a ResNet-50 forward from about 1.35x to about 1.1x
(``benchmarks/monitor_overhead.py``).

The kernel is compiled with the system C compiler (``$CC``, else ``cc``) on
first use, in about 0.3 s, and cached under ``$HOOKSCOPE_CACHE_DIR``
(default ``~/.cache/hookscope``), keyed by the source, the flags and the
CPU. A cache entry that does not load or lacks the kernel's functions is
rebuilt; where the cache cannot be written the kernel is built in a
temporary directory that is removed once it is loaded. Without a compiler,
with ``HOOKSCOPE_NATIVE=0``, after ``set_enabled(False)`` or after any other
failure (tried once per process), `available` is False, `why_unavailable`
says why, and hookscope uses eager reductions: the same statistics, slower.

This is the one place in `hookscope.stats` that does I/O (running the
compiler, writing the cache), once per machine and kernel version; the
statistics themselves stay pure.
"""

from __future__ import annotations

import ctypes
import math
import os
import shutil
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources

import torch

from hookscope.stats._build import build as _build
from hookscope.stats._build import cache_dir as _cache_dir
from hookscope.stats._build import key as _key
from hookscope.stats._build import open_library as _open

#: Type codes shared with ``_kernel.c``.
_CODES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2, torch.float64: 3}
#: Flag sets tried in order until one compiles (`_flag_sets` puts ``-fopenmp`` first where it fits).
_FLAG_SETS = (("-march=native",), ())
#: ``$HOOKSCOPE_KERNEL_HELPERS`` values, as ``hs_set_helpers`` codes.
_HELPER_MODES = {"auto": 0, "always": 1, "never": 2}


@dataclass
class _State:
    lib: ctypes.CDLL | None = None
    codes: dict[torch.dtype, int] = field(default_factory=dict)  # dtypes this build reduces
    reason: str | None = None  # why loading failed (it is not retried)
    off: bool = False  # set_enabled(False)
    helpers: int | None = None  # set_helpers' mode; None: $HOOKSCOPE_KERNEL_HELPERS


_lock = threading.Lock()
_state = _State()
_listeners: list[Callable[[], None]] = []


def _after_fork() -> None:
    """A forked child gets a fresh lock (a build on another thread, e.g. `cpuops.prepare`'s, may hold it)."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
_Out6 = ctypes.c_double * 6
_Out9 = ctypes.c_double * 9


class Moments:
    """Results of one kernel call (host floats).

    ``shifted_sum`` and ``shifted_sumsq`` are the sum and sum of squares of
    ``x - shift`` (``shift`` is the tensor's first finite element), which keep
    the variance's digits when ``|mean| >> std``; ``sum`` and ``sumsq`` are
    those of ``x`` itself.
    """

    __slots__ = ("max", "min", "n", "nonzero", "shift", "shifted_sum", "shifted_sumsq")

    def __init__(self, values: Sequence[float], n: int) -> None:
        self.shifted_sum, self.shifted_sumsq, self.min, self.max, self.nonzero, self.shift = values
        self.n = n

    @property
    def sum(self) -> float:
        """Sum of the elements."""
        return self.shifted_sum + self.n * self.shift

    @property
    def sumsq(self) -> float:
        """Sum of the squared elements."""
        c = self.shift
        return self.shifted_sumsq + c * (2.0 * self.shifted_sum + self.n * c)


def set_enabled(enabled: bool) -> None:
    """Turn the kernel off (eager reductions) or back on for this process, e.g. to compare."""
    _state.off = not enabled
    for listener in _listeners:
        listener()


def on_switch(listener: Callable[[], None]) -> None:
    """Call ``listener()`` after each `set_enabled` (`hookscope.stats.cpuops` follows the switch)."""
    if listener not in _listeners:
        _listeners.append(listener)


def set_helpers(policy: str) -> None:
    """Set when large tensors get helper threads: ``auto``, ``always`` or ``never``.

    ``auto`` (the default, or ``$HOOKSCOPE_KERNEL_HELPERS``) invites helpers
    only for idle cores; ``always`` up to ``torch.get_num_threads()``;
    ``never`` keeps every pass on the calling thread. Results do not depend on it.

    Raises:
        ValueError: for any other ``policy``.
    """
    mode = _HELPER_MODES.get(policy)
    if mode is None:
        raise ValueError(f"policy must be one of {', '.join(_HELPER_MODES)}, got {policy!r}")
    _state.helpers = mode  # also for a kernel loaded later
    lib = _library()
    if lib is not None:
        lib.hs_set_helpers(mode)


def available() -> bool:
    """True when the kernel is built (building it now if needed)."""
    return _library() is not None


def why_unavailable() -> str | None:
    """Why the kernel cannot be used, or None when it can. Never raises."""
    if _library() is not None:
        return None
    return "turned off by set_enabled(False)" if _state.off else _state.reason


def moments(tensor: torch.Tensor, shift: float | None = None) -> Moments | None:
    """Shifted sums, min, max and non-zero count of a dense CPU tensor in one pass.

    ``shift`` is subtracted from every element before summing (None: the
    first finite element), as a ``float`` of the tensor's precision for
    float16/bfloat16/float32 (choose one that is exact there).

    Returns None when the kernel cannot take ``tensor`` (not CPU, not
    float16/bfloat16/float32/float64, not dense, or no kernel). min and max
    skip NaN; a NaN or Inf makes ``shifted_sum`` or ``shifted_sumsq``
    non-finite, and so does a float64 sum of squares beyond the float64 range.
    """
    if not takes(tensor):
        return None
    out = _Out6()
    n = tensor.numel()
    start = math.nan if shift is None else shift
    lib = _state.lib
    assert lib is not None
    lib.hs_reduce(
        _state.codes[tensor.dtype], tensor.data_ptr(), n, torch.get_num_threads(), start, out
    )
    return Moments(out[:], n)


def loaded() -> tuple[ctypes.CDLL, dict[torch.dtype, int]] | None:
    """The kernel library and its dtype codes (loading it if needed), or None; for `rowop`."""
    lib = _library()
    return None if lib is None else (lib, _state.codes)


def takes(tensor: torch.Tensor) -> bool:
    """True when `moments` can reduce ``tensor``: dense, on the CPU, a dtype the kernel has."""
    return (
        tensor.is_cpu
        and tensor.layout == torch.strided
        and _library() is not None
        and tensor.dtype in _state.codes
        and _dense(tensor)
    )


def moments_relu(
    tensor: torch.Tensor, shift: float | None = None
) -> tuple[Moments, Moments] | None:
    """`moments` of ``tensor`` and of ``relu(tensor)``, in one call (float32 only).

    Each part of the tensor is read from memory once; the ReLU sums re-read it
    from cache.

    The second `Moments` describes ``y = max(x, 0)`` as an ``nn.ReLU`` would
    make it from finite ``x``: its shift is ``max(shift, 0)``, its min and max
    follow from ``x``'s. A NaN in ``x`` becomes 0 there, not NaN as in
    ``torch.relu``: use the second only when the first's sums are finite.

    Returns None when the kernel cannot take ``tensor`` (see `moments`) or
    it is not float32.
    """
    if tensor.dtype != torch.float32 or not takes(tensor):
        return None
    lib = _state.lib
    assert lib is not None
    out = _Out9()
    n = tensor.numel()
    start = math.nan if shift is None else shift
    lib.hs_reduce_relu(0, tensor.data_ptr(), n, torch.get_num_threads(), start, out)
    values = out[:]
    return Moments(values[:6], n), _relu_moments(values, n)


def _relu_moments(out: Sequence[float], n: int) -> Moments:
    """The `Moments` of ``relu(x)`` from a ReLU pass's nine values (``x``'s six, then the ReLU's)."""
    shift = max(out[5], 0.0)
    positive = out[8]
    low = 0.0 if positive < n else out[2]  # some x <= 0 gives a 0 in y
    return Moments((out[6], out[7], low, max(out[3], 0.0), positive, shift), n)


def moments_affine(
    x: torch.Tensor,
    mean: torch.Tensor,
    scale: torch.Tensor,
    bias: torch.Tensor,
    *,
    relu: bool = False,
) -> tuple[Moments, Moments | None] | None:
    """`moments` of ``y = (x - mean) * scale + bias`` (per channel, along dim 1), not making ``y``.

    ``x`` is read once: the kernel makes ``y`` a block at a time in a small
    buffer and reduces it there. The results are bit for bit those of
    `moments` (with ``relu``, `moments_relu`) of ``y`` made by torch's
    ``sub``, ``mul`` and ``add`` in float32. The second `Moments` is
    ``relu(y)``'s with ``relu``, else None.

    Returns None when the kernel cannot take ``x`` (see `moments`; float32
    only, at least 2-D) or the parameters are not float32 CPU tensors of
    ``x.shape[1]`` elements.
    """
    if x.dtype != torch.float32 or x.dim() < 2 or not takes(x):
        return None
    channels = x.shape[1]
    params = (mean, scale, bias)
    if any(t.dtype != torch.float32 or not t.is_cpu or t.numel() != channels for t in params):
        return None
    mean, scale, bias = (t.contiguous() for t in params)  # then C floats in a row, any shape
    lib = _state.lib
    assert lib is not None
    out = _Out9()
    n = x.numel()
    stride = x.stride(1) if channels > 1 else 1  # a size-1 dim's stride may be anything
    failed = lib.hs_reduce_affine(
        x.data_ptr(),
        n,
        stride,
        channels,
        mean.data_ptr(),
        scale.data_ptr(),
        bias.data_ptr(),
        int(relu),
        torch.get_num_threads(),
        out,
    )
    if failed:
        return None
    values = out[:]
    return Moments(values[:6], n), (_relu_moments(values, n) if relu else None)


def _dense(tensor: torch.Tensor) -> bool:
    """True when the elements fill one block of memory in some order (e.g. channels-last)."""
    if tensor.is_contiguous():
        return True
    if tensor.dim() == 4 and tensor.is_contiguous(memory_format=torch.channels_last):
        return True  # inductor's and oneDNN's convolution outputs: no sort of the strides
    expected = 1
    for stride, size in sorted(zip(tensor.stride(), tensor.shape, strict=True)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def _library() -> ctypes.CDLL | None:
    if _state.off:
        return None
    if _state.lib is None and _state.reason is None:
        with _lock:
            if _state.lib is None and _state.reason is None:
                try:
                    lib = _load()
                    codes = {d: c for d, c in _CODES.items() if lib.hs_supports(c)}
                    lib.hs_set_helpers(_helper_mode() if _state.helpers is None else _state.helpers)
                except Exception as exc:  # any failure: eager reductions, once, with the reason
                    _state.reason = str(exc) or type(exc).__name__
                else:
                    _state.codes = codes
                    _state.lib = lib  # last: readers check it without the lock
    return _state.lib


class _Unavailable(Exception):
    pass


def _helper_mode() -> int:
    """The ``hs_set_helpers`` code for ``$HOOKSCOPE_KERNEL_HELPERS`` (a bad value warns: auto)."""
    value = os.environ.get("HOOKSCOPE_KERNEL_HELPERS", "auto")
    mode = _HELPER_MODES.get(value.strip().lower())
    if mode is None:
        warnings.warn(
            f"HOOKSCOPE_KERNEL_HELPERS={value!r} is not one of {', '.join(_HELPER_MODES)};"
            " using auto",
            stacklevel=2,
        )
        return 0
    return mode


def _load() -> ctypes.CDLL:
    if os.environ.get("HOOKSCOPE_NATIVE", "1") == "0":
        raise _Unavailable("disabled by HOOKSCOPE_NATIVE=0")
    source = resources.files("hookscope.stats").joinpath("_kernel.c").read_bytes()
    compiler = os.environ.get("CC") or "cc"
    if shutil.which(compiler) is None:
        raise _Unavailable(f"no C compiler found ({compiler!r}; set CC)")
    cache = _cache_dir()
    errors = []
    for flags in _flag_sets():
        path = None if cache is None else cache / f"kernel-{_key(source, compiler, flags)}.so"
        lib = _open(path) if path is not None and path.is_file() else None
        if lib is None:  # not built yet, a damaged cache entry, or no cache: build it
            lib, error = _build(source, compiler, flags, path)
            if lib is None:
                errors.append(f"{' '.join(flags) or 'plain'}: {error}")
                continue
        return lib
    raise _Unavailable("could not build the kernel: " + "; ".join(errors)[:500])


def _flag_sets() -> tuple[tuple[str, ...], ...]:
    """`_FLAG_SETS`, led by an OpenMP build where torch's own libgomp is loaded.

    Built with ``-fopenmp``, the kernel links ``libgomp.so.1`` by name, which
    is then the copy torch already loaded: its parallel parts run on torch's
    intra-op workers, which are awake right after every torch op (measured on
    a 2-core VM: a 1.6 MB tensor in 25 us instead of 63 us). Where torch uses
    another OpenMP runtime (or none), a second runtime would compete with it,
    so the kernel keeps its own helper threads.
    """
    if _torch_libgomp():
        return (("-march=native", "-fopenmp"), *_FLAG_SETS)
    return _FLAG_SETS


def _torch_libgomp() -> bool:
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any(
                line.rstrip().endswith("libgomp.so.1") and torch_dir in line for line in maps
            )
    except OSError:  # not Linux: no way to tell which runtime torch loaded
        return False
