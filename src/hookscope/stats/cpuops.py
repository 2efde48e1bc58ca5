"""The row ops' CPU kernels in C++ (``_ops.cpp``): inductor's wrapper calls them with no Python kernel.

Inductor calls each extern row op of a compiled Monitor (`hookscope.stats.rowop`,
`hookscope.stats.gradrow`) from its Python wrapper through the dispatcher. With
a Python kernel the dispatcher then calls back into Python, and in a real
training step, right after the model's own kernels have pushed the
interpreter out of the caches, that crossing costs tens of microseconds a
call even for a kernel that does nothing (SmallCNN: 18 calls a step; see the
"Monitor on a compiled model" section of benchmarks/README.md). `ensure`
registers C++ kernels for the CPU instead, built against the installed
torch's stable C shim: the dispatcher calls them directly, and they call
the same C entries (`hookscope.stats.native`) the Python kernels call.

Each C++ kernel takes its fast path only where the Python kernel would call
the same C entry with the same arguments (a float64 ``(rows, 9)`` buffer, a
dense tensor of a dtype the kernel reduces, indices in range); everything
else, a NaN or Inf that the C entry reports included, goes to the Python
kernel through a twin op (``hookscope::merge_row_py_`` and so on) with the
same arguments. The rows are therefore bit for bit those of the Python
kernels, which stay the kernels for other devices and for the CPU where
this module cannot build.

The library is built once per torch build and source with the system C++
compiler (``$CXX``, else ``c++``; about a second: the shim is a C header, no
ATen headers) and cached beside the C kernel (`hookscope.stats._build`). A
Monitor opened on a CPU model starts loading it on a background thread
(`prepare`), and the first time a row op is traced its fake kernel waits for
it (`ensure`). On torch older than 2.13, without a compiler, torch's
headers or the C kernel, or after any failure (tried once per process),
`ensure` returns False and `why_unavailable` says why; the Python kernels
then run, with the same rows. ``HOOKSCOPE_CPU_OPS=0`` keeps them from the start.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import torch

from hookscope.stats import gradrow, native, oplib, rowop
from hookscope.stats._build import build as _build
from hookscope.stats._build import cache_dir as _cache_dir
from hookscope.stats._build import key as _key

__all__ = [
    "active",
    "clear_buffer",
    "ensure",
    "fallbacks",
    "prepare",
    "set_buffer",
    "set_enabled",
    "why_unavailable",
]

#: Entry points of a usable ``_ops.cpp`` build.
_SYMBOLS = (
    "hs_ops_setup",
    "hs_ops_register",
    "hs_ops_set_on",
    "hs_ops_set_buffer",
    "hs_ops_clear_buffer",
    "hs_ops_fallbacks",
)
#: The dtypes in ``hs_ops_setup``'s order of kernel codes.
_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


@dataclass
class _State:
    lib: ctypes.CDLL | None = None  # registered
    tried: bool = False
    reason: str | None = None
    enabled: bool = True  # set_enabled
    #: gradrow key -> (address of row 0, row stride in float64s, rows), pushed to the library.
    places: dict[int, tuple[int, int, int]] = field(default_factory=dict)


_lock = threading.Lock()
#: Guards `_State.places` and its copy in the library (a build never holds it).
_places_lock = threading.Lock()
_state = _State()
_started = False  # `prepare`'s thread


def _after_fork() -> None:
    """A forked child gets fresh locks: `prepare`'s thread may have held one, and is gone there."""
    global _lock, _places_lock, _started
    _lock, _places_lock, _started = threading.Lock(), threading.Lock(), False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def ensure() -> bool:
    """Register the C++ kernels (building them if needed) once per process; True when they run.

    Never raises: any failure leaves the Python kernels in place, with the
    reason in `why_unavailable`.
    """
    if not _state.tried:
        with _lock:
            if not _state.tried:
                try:
                    _install()
                except Exception as exc:  # a build or load failure: the Python kernels stay
                    _state.reason = str(exc) or type(exc).__name__
                _state.tried = True
    return active()


def prepare() -> None:
    """Start `ensure` on a background thread, once: the first build then overlaps other work.

    A Monitor opened on a CPU model calls it, so that a first-ever build (about
    two seconds, with the C kernel's) runs while dynamo traces the model rather
    than inside the first row op's trace, which waits for it (`ensure`).
    """
    global _started
    if _state.tried or _started:
        return
    _started = True
    # not a daemon: a process that exits first waits for the build (no orphaned compiler)
    threading.Thread(target=ensure, name="hookscope-cpuops").start()


def active() -> bool:
    """Whether the C++ kernels are registered and on (not `set_enabled(False)`, kernel on)."""
    return _state.lib is not None and _state.enabled and native.loaded() is not None


def why_unavailable() -> str | None:
    """Why `ensure` did not register the kernels (None: it did, or was not called yet)."""
    return _state.reason


def fallbacks() -> int:
    """How many calls the C++ kernels have handed to the Python kernels in this process."""
    return 0 if _state.lib is None else int(_state.lib.hs_ops_fallbacks())


def set_enabled(enabled: bool) -> None:
    """Route the ops through the Python kernels (False), e.g. to compare, or back (True)."""
    _state.enabled = enabled
    _sync()


def set_buffer(key: int, address: int, stride: int, rows: int) -> None:
    """Tell the kernels where ``key``'s gradient rows are (`hookscope.stats.gradrow.register`).

    ``address`` is row 0's, ``stride`` the row stride in float64 elements.
    """
    with _places_lock:
        _state.places[key] = (address, stride, rows)
        if _state.lib is not None:
            _state.lib.hs_ops_set_buffer(key, address, stride, rows)


def clear_buffer(key: int) -> None:
    """Forget ``key``'s rows: the kernel hands its calls to the Python kernel (which skips them)."""
    with _places_lock:
        _state.places.pop(key, None)
        if _state.lib is not None:
            _state.lib.hs_ops_clear_buffer(key)


def _sync() -> None:
    if _state.lib is not None:
        _state.lib.hs_ops_set_on(int(active()))


def _install() -> None:
    if os.environ.get("HOOKSCOPE_CPU_OPS", "1") == "0":
        raise RuntimeError("disabled by HOOKSCOPE_CPU_OPS=0")
    got = native.loaded()
    if got is None:
        raise RuntimeError(f"no C kernel: {native.why_unavailable()}")
    kernel, codes = got
    # the twin *_py ops the C++ kernels fall back to exist: gradrow and rowop are imported
    lib = _load()
    entries = (kernel.hs_merge_row, kernel.hs_grad_row_add, kernel.hs_affine_row)
    addresses = [ctypes.cast(fn, ctypes.c_void_p).value for fn in (*entries, kernel.hs_move_row)]
    table = (ctypes.c_int * len(_DTYPES))(*(codes.get(d, -1) for d in _DTYPES))
    lib.hs_ops_setup(*addresses, table)
    failed = lib.hs_ops_register()
    if failed:
        raise RuntimeError(f"hs_ops_register failed at step {failed}")
    with _places_lock:  # a buffer registered from now on is pushed by `set_buffer` itself
        for key, (address, stride, rows) in _state.places.items():
            lib.hs_ops_set_buffer(key, address, stride, rows)
        _state.lib = lib
    native.on_switch(_sync)
    _sync()


def _load() -> ctypes.CDLL:
    """The built ``_ops.cpp`` (from the cache, or compiled now) with its signatures set."""
    if sys.platform == "win32":
        raise RuntimeError("not built on Windows")
    compiler = os.environ.get("CXX") or "c++"
    if shutil.which(compiler) is None:
        raise RuntimeError(f"no C++ compiler found ({compiler!r}; set CXX)")
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 13):
        raise RuntimeError(f"needs torch >= 2.13 (its stable C shim), not {torch.__version__}")
    root = Path(torch.__file__).parent
    include, libdir = root / "include", root / "lib"
    if not (include / "torch" / "csrc" / "stable" / "c" / "shim.h").is_file():
        raise RuntimeError(f"torch {torch.__version__} has no stable C shim header")
    source = resources.files("hookscope.stats").joinpath("_ops.cpp").read_bytes()
    flags = ("-std=c++17", f"-I{include}")
    libs = (f"-L{libdir}", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{libdir}")
    cache = _cache_dir()
    digest = _key(source, compiler, (*flags, *libs, torch.__version__))
    path = None if cache is None else cache / f"ops-{digest}.so"
    lib = _open(path) if path is not None and path.is_file() else None
    if lib is None:
        lib, error = _build(source, compiler, flags, path, name="ops.cpp", libs=libs, opener=_open)
        if lib is None:
            raise RuntimeError(f"could not build the C++ op kernels: {error}"[:500])
    return lib


def _open(path: Path) -> ctypes.CDLL | None:
    """The library at ``path`` with its signatures set, or None if it is not ours."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    if not all(hasattr(lib, name) for name in _SYMBOLS):
        return None
    ptr, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.hs_ops_setup.argtypes = [ptr, ptr, ptr, ptr, ctypes.POINTER(ctypes.c_int)]
    lib.hs_ops_setup.restype = None
    lib.hs_ops_register.argtypes = []
    lib.hs_ops_register.restype = ctypes.c_int
    lib.hs_ops_set_on.argtypes = [ctypes.c_int]
    lib.hs_ops_set_on.restype = None
    lib.hs_ops_set_buffer.argtypes = [i64, i64, i64, i64]
    lib.hs_ops_set_buffer.restype = None
    lib.hs_ops_clear_buffer.argtypes = [i64]
    lib.hs_ops_clear_buffer.restype = None
    lib.hs_ops_fallbacks.argtypes = []
    lib.hs_ops_fallbacks.restype = ctypes.c_int64
    return lib


def _watch_buffer(key: int, place: tuple[int, int, int] | None) -> None:
    if place is None:
        clear_buffer(key)
    else:
        set_buffer(key, *place)


# gradrow and rowop never import this module: they tell it what it needs through these
oplib.on_cpu_trace(ensure)
rowop.SWITCHES.append(set_enabled)
gradrow.WATCHERS.append(_watch_buffer)
for _buffer, _place in gradrow.places().items():  # buffers registered before this import
    set_buffer(_buffer, *_place)
