"""A compiled Monitor on the CPU: its row ops run as C++ kernels (`hookscope.stats.cpuops`)."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch._dynamo as dynamo

import hookscope
from hookscope.stats import cpuops, native
from hookscope.zoo import SmallCNN


def _records(model: SmallCNN, compiled: bool, steps: int) -> dict[tuple[str, str, str], float]:
    """The last of ``steps`` training steps' records (inductor, the default backend)."""
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with hookscope.Monitor(model) as mon:
        call = torch.compile(model) if compiled else model
        for _ in range(steps):
            call(x).square().mean().backward()
            result = mon.step()
            model.zero_grad()
    assert result is not None and result.missing == ()
    return {(r.phase, r.module, r.stat): r.value for r in result.records}


@pytest.mark.skipif(not native.available(), reason="needs the C kernel")
def test_compiled_rows_come_from_the_cpp_kernels_and_equal_eager() -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    eager = _records(copy.deepcopy(model), compiled=False, steps=1)
    dynamo.reset()
    compiled = _records(model, compiled=True, steps=1)  # tracing a row op registers them
    if not cpuops.active():
        pytest.skip(f"C++ op kernels unavailable: {cpuops.why_unavailable()}")
    before = cpuops.fallbacks()
    again = _records(model, compiled=True, steps=2)
    assert cpuops.fallbacks() == before  # every row of a finite step: no Python kernel
    assert compiled.keys() == eager.keys() == again.keys()
    assert {key[0] for key in eager} == {"forward", "backward", "param"}
    for key, value in eager.items():
        assert math.isclose(compiled[key], value, rel_tol=1e-4, abs_tol=1e-6), key
