"""The one-pass C kernel against NumPy, and how it is built, cached and refused."""

from __future__ import annotations

import ctypes
import json
import math
import os
import struct
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from hookscope.stats import native

pytestmark = pytest.mark.skipif(
    not native.available(), reason=f"native kernel unavailable: {native.why_unavailable()}"
)

# Lengths around the kernel's block (2048), vector width and per-thread split (65536).
SIZES = [1, 15, 16, 2047, 2048, 2049, 65536 * 2 + 17, (1 << 20) + 3]


def reference(t: torch.Tensor) -> dict[str, float]:
    a = t.detach().double().numpy().ravel()
    return {
        "sum": float(a.sum()),
        "sumsq": float((a * a).sum()),
        "min": float(a.min()),
        "max": float(a.max()),
        "nonzero": float(np.count_nonzero(a)),
    }


def as_dict(got: native.Moments | None) -> dict[str, float]:
    assert got is not None
    return {k: getattr(got, k) for k in ("sum", "sumsq", "min", "max", "nonzero")}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(
    ("dtype", "rel"),
    [(torch.float32, 1e-5), (torch.float64, 1e-12), (torch.bfloat16, 1e-5), (torch.float16, 1e-5)],
)
def test_matches_numpy(n: int, dtype: torch.dtype, rel: float) -> None:
    t = (torch.randn(n, dtype=torch.float64) * 3 + 0.5).to(dtype)
    t[:: max(n // 7, 1)] = 0.0
    got = as_dict(native.moments(t))
    ref = reference(t)
    assert got["min"] == ref["min"] and got["max"] == ref["max"]
    assert got["nonzero"] == ref["nonzero"]
    assert got["sum"] == pytest.approx(ref["sum"], rel=rel, abs=1e-6 * n)
    assert got["sumsq"] == pytest.approx(ref["sumsq"], rel=rel)


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_thread_count_changes_only_rounding(threads: int) -> None:
    t = torch.randn(1_000_003)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    native.set_helpers("always")  # whatever else runs on this machine
    try:
        got = as_dict(native.moments(t))
    finally:
        native.set_helpers("auto")
        torch.set_num_threads(before)
    ref = reference(t)
    assert got["sum"] == pytest.approx(ref["sum"], rel=1e-6, abs=1e-2)
    assert (got["min"], got["max"], got["nonzero"]) == (ref["min"], ref["max"], ref["nonzero"])


def test_channels_last_is_read_in_place_and_slices_are_refused() -> None:
    t = torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last)
    assert not t.is_contiguous()
    got = as_dict(native.moments(t))
    assert got["sum"] == pytest.approx(reference(t)["sum"], rel=1e-5, abs=1e-5)
    assert native.moments(torch.randn(6, 6)[:, ::2]) is None  # holes: eager path
    assert native.moments(torch.arange(5)) is None  # integers: eager path
    assert native.moments(torch.randn(3, device="meta")) is None


def test_negative_zero_counts_as_zero_and_nonfinite_shows_in_the_sums() -> None:
    got = native.moments(torch.tensor([-0.0, 0.0, 1.0, -2.0]))
    assert got is not None and got.nonzero == 2.0
    nan = native.moments(torch.tensor([1.0, float("nan"), 3.0]))
    inf = native.moments(torch.tensor([1.0, float("inf"), -3.0]))
    assert nan is not None and inf is not None
    assert np.isnan(nan.sum)
    assert np.isinf(inf.sum) and inf.max == float("inf") and inf.min == -3.0


def run_fresh(env: dict[str, str], code: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter (a fresh kernel state); it prints one JSON line."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


PROBE = """
import json, torch
from hookscope.stats import native
import hookscope
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
with hookscope.Monitor(model) as mon, torch.no_grad():
    model(torch.ones(2, 4))
    mon.step()
rows = mon.to_pandas().query("stat == 'mean'").value.round(6).tolist()
print(json.dumps({"available": native.available(), "why": native.why_unavailable(), "means": rows}))
"""


def test_without_a_compiler_the_monitor_falls_back_to_eager(tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    built = run_fresh({"HOOKSCOPE_CACHE_DIR": cache}, PROBE)
    missing = run_fresh({"HOOKSCOPE_CACHE_DIR": cache + "2", "CC": "no-such-cc"}, PROBE)
    off = run_fresh({"HOOKSCOPE_CACHE_DIR": cache, "HOOKSCOPE_NATIVE": "0"}, PROBE)
    assert built["available"] and built["why"] is None
    assert not missing["available"] and "no-such-cc" in str(missing["why"])
    assert not off["available"] and "HOOKSCOPE_NATIVE=0" in str(off["why"])
    assert built["means"] == missing["means"] == off["means"]


def test_kernel_is_cached_and_built_once_under_concurrency(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "HOOKSCOPE_CACHE_DIR": str(cache)}
    code = "from hookscope.stats import native; import torch; assert native.available()"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env) for _ in range(3)]
    assert [p.wait(timeout=240) for p in procs] == [0, 0, 0]
    built = list((cache / "kernels").iterdir())
    assert [p.suffix for p in built] == [".so"]  # one finished library, no stray temp files
    stamp = built[0].stat().st_mtime_ns
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=240)
    assert built[0].stat().st_mtime_ns == stamp  # loaded from the cache, not rebuilt


def test_set_enabled_switches_between_kernel_and_eager() -> None:
    t = torch.randn(100)
    native.set_enabled(False)
    try:
        assert not native.available() and native.moments(t) is None
        assert "set_enabled" in str(native.why_unavailable())
    finally:
        native.set_enabled(True)
    assert native.available() and native.moments(t) is not None


def test_a_damaged_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"HOOKSCOPE_CACHE_DIR": str(cache)}
    code = "import json; from hookscope.stats import native; print(json.dumps({'why': native.why_unavailable()}))"
    assert run_fresh(env, code) == {"why": None}
    (built,) = (cache / "kernels").iterdir()
    built.write_bytes(b"not a shared library")
    assert run_fresh(env, code) == {"why": None}
    assert built.read_bytes() != b"not a shared library"  # rebuilt in place, same flags


COUNTED_PROBE = """
import hookscope.stats.native as native
builds = []
_build = native._build
native._build = lambda *a: builds.append(1) or _build(*a)
""" + PROBE.replace('"means": rows', '"means": rows, "builds": len(builds)')


def kernel_path(cache: Path) -> Path:
    """The C kernel's cache entry (a Monitor also loads the C++ op kernels: `cpuops.prepare`)."""
    (built,) = (cache / "kernels").glob("kernel-*")
    return built


def test_a_cached_library_without_the_kernel_is_rebuilt(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    good = run_fresh({"HOOKSCOPE_CACHE_DIR": str(cache)}, PROBE)
    path = kernel_path(cache)
    stranger = tmp_path / "stranger.c"
    stranger.write_text("int something_else(void) { return 1; }\n")
    subprocess.run(
        ["cc", "-shared", "-fPIC", str(stranger), "-o", str(path)], check=True, timeout=120
    )
    got = run_fresh({"HOOKSCOPE_CACHE_DIR": str(cache)}, COUNTED_PROBE)
    assert got["available"] and got["why"] is None and got["builds"] == 1
    assert got["means"] == good["means"]
    again = run_fresh({"HOOKSCOPE_CACHE_DIR": str(cache)}, COUNTED_PROBE)
    assert again["builds"] == 0  # the rebuilt library replaced the stranger


def test_a_directory_at_the_cache_path_builds_once_and_leaves_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    good = run_fresh({"HOOKSCOPE_CACHE_DIR": str(cache)}, PROBE)
    path = kernel_path(cache)
    path.unlink()
    path.mkdir()
    got = run_fresh({"HOOKSCOPE_CACHE_DIR": str(cache)}, COUNTED_PROBE)
    assert got["available"] and got["why"] is None
    assert got["builds"] == 1 and got["means"] == good["means"]  # once, not per hook call
    assert [p.name for p in (cache / "kernels").glob("kernel-*")] == [path.name]  # no *.tmp


def test_an_unusable_cache_dir_leaves_no_temporary_directories(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"HOOKSCOPE_CACHE_DIR": str(blocker / "cache"), "TMPDIR": str(tmp)}
    got = run_fresh(env, COUNTED_PROBE)
    assert got["available"] and got["builds"] == 1
    assert list(tmp.iterdir()) == []


def test_any_loading_failure_falls_back_once_with_a_reason(tmp_path: Path) -> None:
    fake_cc = tmp_path / "fake-cc"
    fake_cc.write_text("#!/bin/sh\necho 'fake-cc: refuses to build' >&2\nexit 3\n")
    fake_cc.chmod(0o755)
    got = run_fresh(
        {"HOOKSCOPE_CACHE_DIR": str(tmp_path / "cache"), "CC": str(fake_cc)}, COUNTED_PROBE
    )
    assert not got["available"] and "refuses to build" in str(got["why"])
    # each flag set once (an OpenMP build first where torch runs on libgomp), then eager for good
    assert got["builds"] == len(native._flag_sets())
    assert got["means"] == run_fresh({"HOOKSCOPE_NATIVE": "0"}, PROBE)["means"]


FORK_PROBE = """
import json, multiprocessing as mp, torch
from hookscope.stats import native
torch.set_num_threads(2)
t = torch.randn(1_000_003)
parent = native.moments(t).shifted_sum  # helper threads started in the parent

def child(queue):
    queue.put(native.moments(t).shifted_sum)

ctx = mp.get_context("fork")
queue = ctx.Queue()
procs = [ctx.Process(target=child, args=(queue,)) for _ in range(2)]
for p in procs:
    p.start()
got = [queue.get(timeout=60) for _ in procs]
for p in procs:
    p.join(timeout=60)
print(json.dumps({"parent": parent, "children": got, "codes": [p.exitcode for p in procs]}))
"""


def test_forked_children_start_their_own_helpers(tmp_path: Path) -> None:
    env = {"HOOKSCOPE_CACHE_DIR": str(tmp_path / "cache"), "HOOKSCOPE_KERNEL_HELPERS": "always"}
    got = run_fresh(env, FORK_PROBE)
    assert got["children"] == [got["parent"], got["parent"]]  # same parts: bit-identical
    assert got["codes"] == [0, 0]


def test_where_torch_runs_on_libgomp_the_kernel_shares_its_openmp_workers() -> None:
    if not native._torch_libgomp():
        pytest.skip("this torch does not run on its own libgomp")
    loaded = native.loaded()
    assert loaded is not None, native.why_unavailable()
    lib, _ = loaded
    # dlsym on the kernel's handle searches its dependencies: it links libgomp...
    assert hasattr(lib, "omp_get_max_threads")
    # ...and that is torch's copy, the only OpenMP runtime in the process
    with open("/proc/self/maps", encoding="utf-8") as maps:
        runtimes = {line.split()[-1] for line in maps if "libgomp" in line or "libiomp" in line}
    assert len(runtimes) == 1 and next(iter(runtimes)).startswith(os.path.dirname(torch.__file__))
    t = torch.randn(1_000_003)
    native.set_helpers("never")
    try:
        alone = native.moments(t)
        native.set_helpers("always")  # torch's workers take parts, whatever else runs
        shared = native.moments(t)
    finally:
        native.set_helpers("auto")
    assert alone is not None and shared is not None
    assert (alone.shifted_sum, alone.shifted_sumsq, alone.min, alone.max, alone.nonzero) == (
        shared.shifted_sum,
        shared.shifted_sumsq,
        shared.min,
        shared.max,
        shared.nonzero,
    )


#: Start of a probe that counts this process's threads (``tasks()``); ``before`` is the count.
TASKS_PROBE = """
import json, os, subprocess, sys, time, torch
from hookscope.stats import native
torch.set_num_threads({threads})
def tasks():
    return len(os.listdir("/proc/self/task"))
native.moments(torch.randn(10))  # load the kernel
before = tasks()
"""

THREADS_PROBE = (
    TASKS_PROBE.format(threads=3)
    + """
for _ in range(50):
    native.moments(torch.randn(131_071))  # below two parts of 64 Ki: the caller alone
small = tasks()
native.moments(torch.randn(131_072))
one = tasks()
native.moments(torch.randn(4_000_000))
large = tasks()
print(json.dumps({"before": before, "small": small, "one": one, "large": large}))
"""
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
def test_helper_threads_start_only_for_large_tensors_and_stay_bounded(tmp_path: Path) -> None:
    env = {"HOOKSCOPE_CACHE_DIR": str(tmp_path / "cache"), "HOOKSCOPE_KERNEL_HELPERS": "always"}
    got = run_fresh(env, THREADS_PROBE)
    assert got["small"] == got["before"]  # no thread for small tensors
    assert got["one"] - got["before"] == 1  # two parts: one helper
    assert got["large"] - got["before"] == 2  # torch.get_num_threads() - 1, never more


BUSY_PROBE = (
    TASKS_PROBE.format(threads=2)
    + """
burn = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
try:
    time.sleep(1.0)  # every core taken
    for _ in range(20):
        native.moments(torch.randn(4_000_000))
finally:
    for p in burn:
        p.kill()
        p.wait()
print(json.dumps({"before": before, "after": tasks()}))
"""
)


@pytest.mark.skipif(not Path("/proc/loadavg").is_file(), reason="needs /proc/loadavg")
def test_no_helper_is_woken_while_other_processes_take_every_core(tmp_path: Path) -> None:
    env = {"HOOKSCOPE_CACHE_DIR": str(tmp_path / "cache"), "HOOKSCOPE_KERNEL_HELPERS": "auto"}
    got = run_fresh(env, BUSY_PROBE)
    assert got["after"] == got["before"]  # helpers are started on first invitation only


def test_helper_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="'sometimes'"):
        native.set_helpers("sometimes")


def _avx512() -> bool:
    try:
        with open("/proc/cpuinfo") as info:
            return any(line.startswith("flags") and " avx512f " in f"{line} " for line in info)
    except OSError:
        return False


@pytest.mark.skipif(not _avx512(), reason="the CPU has no AVX-512: only the 8-lane loop runs here")
def test_sixteen_lane_loop_gives_the_eight_lane_results_bit_for_bit() -> None:
    """The AVX-512 float32 loops fold their lanes exactly as the 8-lane ones do.

    With AVX-512 the ReLU sums are taken in the same loop as the tensor's own
    (one pass); the 8-lane code takes them in a second pass.
    """
    source = resources.files("hookscope.stats").joinpath("_kernel.c").read_bytes()
    compiler = os.environ.get("CC") or "cc"
    libs = []
    for flags in (("-march=native",), ("-march=native", "-mno-avx512f")):
        lib, error = native._build(source, compiler, flags, None)
        assert lib is not None, error
        libs.append(lib)
    gen = torch.Generator().manual_seed(5)
    cases = [torch.randn(n, generator=gen) * scale + mean for n in (16, 2047, 2048, 2049, 100_003)
             for scale, mean in ((1.0, 0.0), (1e-3, 5.0), (1e20, 0.0))]  # fmt: skip
    odd = torch.randn(5000, generator=gen)
    odd[7], odd[100], odd[3000:3100] = float("nan"), float("inf"), 0.0
    odd[200:4000:3] = -0.0
    zeros = torch.zeros(4096)
    zeros[7::9] = -0.0  # min and max are zeros whose sign depends on the folding order
    cases += [odd, zeros, -zeros]

    def run(lib: Any, fn: str, t: torch.Tensor, shift: float) -> list[float]:
        out = (ctypes.c_double * 9)()
        assert getattr(lib, fn)(0, t.data_ptr(), t.numel(), 1, shift, out) == 0
        return [struct.pack("<d", v) for v in out[: 9 if fn == "hs_reduce_relu" else 6]]

    for t in cases:
        for shift in (math.nan, 0.0, 1.5, -2.0):
            for fn in ("hs_reduce", "hs_reduce_relu"):
                assert run(libs[0], fn, t, shift) == run(libs[1], fn, t, shift), (fn, t.numel())


def _affine_reference(
    x: torch.Tensor, params: torch.Tensor, relu: bool
) -> tuple[native.Moments, native.Moments | None] | None:
    """`moments` (`moments_relu`) of ``(x - mean) * scale + bias`` made by torch's sub, mul, add."""
    shape = [1, -1] + [1] * (x.dim() - 2)
    mean, scale, bias = (p.view(shape) for p in params)
    y = torch.empty_strided(x.shape, x.stride())  # the same memory order as x
    torch.sub(x, mean, out=y)
    y.mul_(scale)
    y.add_(bias)
    return native.moments_relu(y) if relu else (native.moments(y), None)


def _fields(got: native.Moments | None) -> tuple[float, ...] | None:
    if got is None:
        return None
    return (got.shifted_sum, got.shifted_sumsq, got.min, got.max, got.nonzero, got.shift, got.n)


# (shape, channels-last): NCHW runs of one channel; channels-last and 2-D, where the
# channel repeats every few elements (up to 64 elements: held in registers); stride 3
# (short runs); 70,000 channels of stride 1 (longer than the per-position table: runs
# of one); several parts; tails of a block.
AFFINE_CASES = [
    ((4, 6, 5, 5), False),
    ((4, 6, 5, 5), True),
    ((3, 16, 5, 7), True),
    ((8, 32, 20, 20), True),
    ((50, 64), False),
    ((8, 6), False),
    ((4, 100, 3), False),
    ((3, 70_000), False),
    ((3, 4, 70_000), False),
    ((16, 24, 30, 30), True),
    ((5, 1, 7, 7), True),
    ((7, 3, 2047), False),
]


@pytest.mark.parametrize("relu", [False, True], ids=["affine", "affine-relu"])
@pytest.mark.parametrize(("shape", "channels_last"), AFFINE_CASES, ids=str)
def test_affine_moments_equal_those_of_the_made_tensor(
    shape: tuple[int, ...], channels_last: bool, relu: bool
) -> None:
    """One pass over x gives what reducing y made by torch gives, sum for sum."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(shape, generator=gen) * 3 + 1
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    params = torch.randn(3, shape[1], generator=gen)
    params[1:, 0] = 0.0  # channel 0: scale and bias 0, so y has zeros
    native.set_helpers("always")  # parts on helper threads too, whatever else runs
    try:
        got = native.moments_affine(x, *params, relu=relu)
    finally:
        native.set_helpers("auto")
    want = _affine_reference(x, params, relu)
    assert got is not None and want is not None
    # a zero min or max may differ in sign only (blocks, not lanes, are folded first)
    assert _fields(got[0]) == _fields(want[0])
    assert _fields(got[1]) == _fields(want[1])
    assert (got[1] is None) == (not relu)


def test_affine_moments_show_nan_and_inf_and_refuse_what_the_kernel_does_not_take() -> None:
    x = torch.randn(2, 3, 4, 4)
    ones = torch.ones(3)
    for bad, check in ((float("nan"), math.isnan), (float("inf"), math.isinf)):
        y = x.clone()
        y[1, 2, 3, 0] = bad
        got = native.moments_affine(y, ones, ones, ones, relu=True)
        assert got is not None and got[1] is not None
        assert check(got[0].shifted_sum + got[0].shifted_sumsq)  # the caller counts them exactly
    assert native.moments_affine(x[:, :, ::2], ones, ones, ones) is None  # not dense
    assert native.moments_affine(x.double(), ones, ones, ones) is None  # float32 only
    assert native.moments_affine(x, ones[:2], ones, ones) is None  # one per channel
    assert native.moments_affine(x, ones.double(), ones, ones) is None
    assert native.moments_affine(torch.randn(5), ones, ones, ones) is None  # no dim 1
