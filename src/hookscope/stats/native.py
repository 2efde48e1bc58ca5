"""One-pass statistics of CPU tensors through a small C kernel (``_kernel.c``).

Eager PyTorch reads a tensor three times for sum, sum of squares and min/max
(plus once more for a zero count); the kernel reads it once and returns all
five, using the OpenMP threads PyTorch already runs where it can. On a 2-core
CPU that takes the Monitor's overhead on a ResNet-50 forward from about 1.35x
to about 1.14x (``benchmarks/monitor_overhead.py``).

The kernel is compiled with the system C compiler (``$CC``, else ``cc``) on
first use, in about 0.3 s, and cached under ``$HOOKSCOPE_CACHE_DIR``
(default ``~/.cache/hookscope``), keyed by the source, the flags and the
CPU. Without a compiler, with ``HOOKSCOPE_NATIVE=0`` or after
``set_enabled(False)``, `available` is False, `why_unavailable` says why,
and hookscope uses eager reductions: the same statistics, slower.

This is the one place in `hookscope.stats` that does I/O (running the
compiler, writing the cache), once per machine and kernel version; the
statistics themselves stay pure.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import torch

#: Type codes shared with ``_kernel.c``.
_CODES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2, torch.float64: 3}
#: Flag sets tried in order until one compiles.
_FLAG_SETS = (
    ("-march=native", "-fopenmp"),
    ("-fopenmp",),
    ("-march=native",),
    (),
)
_BASE_FLAGS = ("-O3", "-shared", "-fPIC", "-w")


@dataclass
class _State:
    lib: ctypes.CDLL | None = None
    codes: dict[torch.dtype, int] = field(default_factory=dict)  # dtypes this build reduces
    reason: str | None = None  # why loading failed (it is not retried)
    off: bool = False  # set_enabled(False)


_lock = threading.Lock()
_state = _State()


class Moments:
    """Results of one kernel call (host floats)."""

    __slots__ = ("max", "min", "nonzero", "sum", "sumsq")

    def __init__(self, values: ctypes.Array[ctypes.c_double]) -> None:
        self.sum, self.sumsq, self.min, self.max, self.nonzero = values


def set_enabled(enabled: bool) -> None:
    """Turn the kernel off (eager reductions) or back on for this process, e.g. to compare."""
    _state.off = not enabled


def available() -> bool:
    """True when the kernel is built (building it now if needed)."""
    return _library() is not None


def why_unavailable() -> str | None:
    """Why the kernel cannot be used, or None when it can."""
    if _library() is not None:
        return None
    return "turned off by set_enabled(False)" if _state.off else _state.reason


def moments(tensor: torch.Tensor) -> Moments | None:
    """Sum, sum of squares, min, max and non-zero count of a dense CPU tensor in one pass.

    Returns None when the kernel cannot take ``tensor`` (not CPU, not
    float16/bfloat16/float32/float64, not dense, or no kernel). min and max
    skip NaN; a NaN or Inf makes ``sum`` or ``sumsq`` non-finite.
    """
    if tensor.device.type != "cpu" or tensor.layout != torch.strided:
        return None
    lib = _library()
    code = None if lib is None else _state.codes.get(tensor.dtype)
    if lib is None or code is None or not _dense(tensor):
        return None
    out = (ctypes.c_double * 5)()
    lib.hs_reduce(code, tensor.data_ptr(), tensor.numel(), torch.get_num_threads(), out)
    return Moments(out)


def _dense(tensor: torch.Tensor) -> bool:
    """True when the elements fill one block of memory in some order (e.g. channels-last)."""
    if tensor.is_contiguous():
        return True
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
                except _Unavailable as exc:
                    _state.reason = str(exc)
                else:
                    _state.codes = {d: c for d, c in _CODES.items() if lib.hs_supports(c)}
                    _state.lib = lib  # last: readers check it without the lock
    return _state.lib


class _Unavailable(Exception):
    pass


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
        path = cache / f"kernel-{_key(source, compiler, flags)}.so"
        lib = _open(path) if path.exists() else None
        if lib is None:  # not built yet, or a damaged cache entry: (re)build it
            error = _compile(source, compiler, flags, path)
            lib = None if error else _open(path)
            if lib is None:
                errors.append(f"{' '.join(flags) or 'plain'}: {error or 'built, but not loadable'}")
                continue
        return lib
    raise _Unavailable("could not build the kernel: " + "; ".join(errors)[:500])


def _open(path: Path) -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    lib.hs_reduce.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_double),
    ]
    lib.hs_reduce.restype = ctypes.c_int
    lib.hs_supports.argtypes = [ctypes.c_int]
    return lib


def _flag_sets() -> list[tuple[str, ...]]:
    # OpenMP only where it shares the runtime PyTorch loaded (libgomp on
    # Linux); a second OpenMP runtime would fight PyTorch's threads.
    shared_omp = sys.platform.startswith("linux") and _torch_uses_libgomp()
    return [f for f in _FLAG_SETS if shared_omp or "-fopenmp" not in f]


def _torch_uses_libgomp() -> bool:
    try:
        with open("/proc/self/maps") as maps:
            return any("libgomp" in line for line in maps)
    except OSError:
        return False


def _cache_dir() -> Path:
    base = os.environ.get("HOOKSCOPE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hookscope"
    )
    path = Path(base) / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    # A private directory (mode 0700) for this process: a shared, fixed one
    # under /tmp would let another user plant the library we load.
    return Path(tempfile.mkdtemp(prefix="hookscope-kernels-"))


def _key(source: bytes, compiler: str, flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256(source)
    for part in (compiler, *flags, platform.machine(), sys.platform, _cpu_signature()):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:16]


def _cpu_signature() -> str:
    """The CPU's feature flags (``-march=native`` code must not run on another CPU)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    return line
    except OSError:
        pass
    return platform.processor()


def _compile(source: bytes, compiler: str, flags: tuple[str, ...], target: Path) -> str | None:
    """Compile to ``target`` atomically; the error text, or None on success."""
    with tempfile.TemporaryDirectory(prefix="hookscope-build-") as tmp:
        src = Path(tmp) / "kernel.c"
        src.write_bytes(source)
        built = Path(tmp) / "kernel.so"
        try:
            done = subprocess.run(
                [compiler, *_BASE_FLAGS, *flags, str(src), "-o", str(built)],
                capture_output=True,
                text=True,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            return lines[-1] if lines else f"exit status {done.returncode}"
        staged = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(built, staged)
        os.replace(staged, target)  # other processes see the whole file or none
    return None
