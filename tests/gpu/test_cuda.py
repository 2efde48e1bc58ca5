"""CUDA checks (``make gpu-check``): no host sync in the hooks, CPU float64 agreement, fused, NCCL, compiled.

They skip without a CUDA device; ``HOOKSCOPE_GPU_CHECK_DEVICE=cpu`` runs them
on the CPU to check the checks themselves.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from torch import nn

import hookscope
from hookscope.stats import Plan, fetch, reduce_tensor, summarize
from hookscope.zoo import small_cnn
from tests.distributed.harness import free_port
from tests.gpu.workers import reduce_worker

pytestmark = pytest.mark.cuda


@pytest.fixture(autouse=True)
def _exact_matmuls() -> Iterator[None]:
    """No TF32: the float64 references must be comparable at float32 precision."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _reference(t: torch.Tensor) -> dict[str, float]:
    a = t.detach().double().cpu().numpy().ravel()
    return {
        "mean": float(a.mean()),
        "std": float(a.std()),
        "rms": float(np.sqrt((a * a).mean())),
        "min": float(a.min()),
        "max": float(a.max()),
        "absmax": float(np.abs(a).max()),
        "zero_frac": float((a == 0).mean()),
    }


def _tensors(device: torch.device) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(257, 129, generator=g, dtype=torch.float64)
    return {
        "float32": base.float().to(device),
        "float32 relu": base.float().relu().to(device),
        "float32 |mean| >> std": (1e4 + 0.01 * base).float().to(device),
        "bfloat16": base.bfloat16().to(device),
        "float16": base.half().to(device),
        "float32 1M": torch.randn(1 << 20, generator=g).to(device),
    }


@pytest.mark.parametrize("fused", [False, True])
def test_statistics_equal_cpu_float64(device: torch.device, fused: bool) -> None:
    for label, t in _tensors(device).items():
        red = reduce_tensor(t, Plan(zeros="count", fused=fused))
        fetch([red])
        got, want = summarize(red), _reference(t)
        for stat, value in want.items():
            scale = max(abs(want["mean"]), want["rms"])
            assert math.isclose(got[stat], value, rel_tol=1e-5, abs_tol=1e-6 * scale), (
                label,
                stat,
                got[stat],
                value,
            )


def test_no_host_sync_inside_forward_and_backward(device: torch.device) -> None:
    model = small_cnn().to(device)
    x = torch.randn(4, 3, 32, 32, device=device)
    with hookscope.Monitor(model) as mon:
        model(x).sum().backward()  # warm-up: lazy CUDA initialisation may sync
        mon.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
        try:
            model(x).sum().backward()
        finally:
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode("default")
        result = mon.step()
    assert result is not None and len(result.records) > 0


def _records(model: nn.Module, x: torch.Tensor, **options: object) -> dict[tuple[str, ...], float]:
    with hookscope.Monitor(model, **options) as mon:  # type: ignore[arg-type]
        model(x).square().mean().backward()
        result = mon.step()
    assert result is not None and result.missing == ()
    return {(r.phase, r.module, r.tensor, r.stat): r.value for r in result.records}


def _close(got: dict[tuple[str, ...], float], want: dict[tuple[str, ...], float]) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if key[-1] in ("nan_count", "inf_count", "zero_frac"):
            assert got[key] == pytest.approx(value, abs=1e-3), key
        else:
            assert got[key] == pytest.approx(value, rel=2e-3, abs=1e-6), key


def test_monitor_on_the_device_matches_cpu_float64(device: torch.device) -> None:
    model = small_cnn()
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    want = _records(copy.deepcopy(model).double(), x.double(), params=True)
    got = _records(model.to(device), x.to(device), params=True)
    _close(got, want)
    fused = _records(copy.deepcopy(model).to(device), x.to(device), params=True, fused=True)
    _close(fused, want)


def test_compiled_model_on_the_device(device: torch.device) -> None:
    torch._dynamo.reset()
    model = small_cnn().to(device)
    x = torch.randn(4, 3, 32, 32, device=device)
    eager = _records(copy.deepcopy(model), x)
    with hookscope.Monitor(model) as mon:
        compiled = torch.compile(model)
        for _ in range(2):  # the second step runs the cached graph
            compiled(x).square().mean().backward()
            result = mon.step()
    torch._dynamo.reset()
    assert result is not None and result.missing == ()
    got = {(r.phase, r.module, r.tensor, r.stat): r.value for r in result.records}
    want = {k: v for k, v in eager.items() if k[0] != "param"}
    _close({k: v for k, v in got.items() if k in want}, want)


def test_nccl_two_processes_reduce(device: torch.device, tmp_path: Path) -> None:
    if device.type == "cuda" and torch.cuda.device_count() < 2:
        pytest.skip(f"NCCL needs 2 GPUs; {torch.cuda.device_count()} here")
    backend = "nccl" if device.type == "cuda" else "gloo"
    out = tmp_path / "rank0.json"
    ctx = mp.start_processes(
        reduce_worker,
        args=(free_port(), backend, str(out)),
        nprocs=2,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + 180
    while not ctx.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in ctx.processes:
                process.kill()
            pytest.fail("NCCL workers still running after 180 s: a hang")
    got = json.loads(out.read_text())
    assert got["norm"] == pytest.approx(got["expected"], rel=1e-4)
