"""Building and loading ``_kernel.c`` for `hookscope.stats.native`: compiler, cache, signatures.

The library is compiled with the system C compiler and cached under
``$HOOKSCOPE_CACHE_DIR`` keyed by the source, the flags and the CPU (see
`hookscope.stats.native` for the rules). `open_library` sets the ctypes
signatures of every entry point, `build` compiles and publishes a new one.
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
from collections.abc import Callable
from pathlib import Path

#: Flags every build gets (`hookscope.stats.native` adds ``-march=native`` where it can).
_BASE_FLAGS = ("-O3", "-shared", "-fPIC", "-pthread", "-w")
#: Functions a usable library exports.
SYMBOLS = (
    "hs_reduce",
    "hs_reduce_relu",
    "hs_reduce_affine",
    "hs_supports",
    "hs_set_helpers",
    "hs_merge_row",
    "hs_grad_row",
    "hs_affine_row",
    "hs_grad_row_add",
    "hs_move_row",
)


def open_library(path: Path) -> ctypes.CDLL | None:
    """The library at ``path`` with its signatures set, or None if it is not ours."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    if not all(hasattr(lib, name) for name in SYMBOLS):
        return None
    for fn in (lib.hs_reduce, lib.hs_reduce_relu):
        fn.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int64,
            ctypes.c_int,
            ctypes.c_double,
            ctypes.POINTER(ctypes.c_double),
        ]
        fn.restype = ctypes.c_int
    lib.hs_reduce_affine.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_double),
    ]
    lib.hs_reduce_affine.restype = ctypes.c_int
    # the rows of the compiled Monitor (`hookscope.stats.rowop`): rows by address
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.hs_merge_row.argtypes = [ctypes.c_int, ptr, i64, ctypes.c_int, ctypes.c_int, ptr]
    lib.hs_grad_row.argtypes = [ctypes.c_int, ptr, i64, ctypes.c_int, ptr]
    lib.hs_affine_row.argtypes = [ptr, i64, i64, i64, ptr, ptr, ptr, ctypes.c_int, ctypes.c_int]
    lib.hs_affine_row.argtypes += [ptr, ptr]
    lib.hs_grad_row_add.argtypes = lib.hs_grad_row.argtypes
    for fn in (lib.hs_merge_row, lib.hs_grad_row, lib.hs_affine_row, lib.hs_grad_row_add):
        fn.restype = ctypes.c_int
    lib.hs_move_row.argtypes = [ptr, ptr]
    lib.hs_move_row.restype = None
    lib.hs_supports.argtypes = [ctypes.c_int]
    lib.hs_set_helpers.argtypes = [ctypes.c_int]
    return lib


def cache_dir() -> Path | None:
    """The writable kernel cache directory, or None (the kernel is then not cached)."""
    base = os.environ.get("HOOKSCOPE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hookscope"
    )
    path = Path(base) / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if path.is_dir() and os.access(path, os.W_OK) else None


def key(source: bytes, compiler: str, flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256(source)
    for part in (compiler, *flags, platform.machine(), sys.platform, cpu_signature()):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:16]


def cpu_signature() -> str:
    """The CPU's feature flags (``-march=native`` code must not run on another CPU)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    return line
    except OSError:
        pass
    return platform.processor()


def build(
    source: bytes,
    compiler: str,
    flags: tuple[str, ...],
    target: Path | None,
    *,
    name: str = "kernel.c",
    libs: tuple[str, ...] = (),
    opener: Callable[[Path], ctypes.CDLL | None] = open_library,
) -> tuple[ctypes.CDLL | None, str]:
    """Compile, load from the build directory, then publish to ``target`` atomically if possible.

    The library is loaded from its private build directory (removed after;
    the mapping stays), never from ``target``: a process that had loaded a
    bad file from ``target`` would get that same handle back. ``name`` is
    the source file's name (its suffix tells the compiler the language),
    ``libs`` the linker arguments after it, ``opener`` loads and checks the
    result (`open_library` for ``_kernel.c``). Returns the library, or None
    and the error text.
    """
    with tempfile.TemporaryDirectory(prefix="hookscope-build-") as tmp:
        src = Path(tmp) / name
        src.write_bytes(source)
        built = Path(tmp) / "kernel.so"
        try:
            done = subprocess.run(
                [compiler, *_BASE_FLAGS, *flags, str(src), "-o", str(built), *libs],
                capture_output=True,
                text=True,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, str(exc)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            return None, lines[-1] if lines else f"exit status {done.returncode}"
        lib = opener(built)
        if lib is None:
            return None, "built, but not loadable"
        if target is not None:
            publish(built, target)
    return lib, ""


def publish(built: Path, target: Path) -> None:
    """Put ``built`` at ``target`` whole or not at all (other processes load it)."""
    staged = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(built, staged)
        os.replace(staged, target)
    except OSError:  # e.g. a directory at ``target``: this process still has its kernel
        staged.unlink(missing_ok=True)
