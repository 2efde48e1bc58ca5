"""The device the GPU checks run on: CUDA, or the CPU for a dry run of the checks themselves.

``HOOKSCOPE_GPU_CHECK_DEVICE=cpu`` runs every test in this folder on the CPU
(NCCL becomes gloo), so the checks can be exercised on a machine without a
GPU; by default they skip there.
"""

from __future__ import annotations

import os

import pytest
import torch


def gpu_device() -> torch.device | None:
    """``cuda`` when available, ``cpu`` for a dry run, else None (the tests skip)."""
    if os.environ.get("HOOKSCOPE_GPU_CHECK_DEVICE") == "cpu":
        return torch.device("cpu")
    return torch.device("cuda") if torch.cuda.is_available() else None


@pytest.fixture
def device() -> torch.device:
    found = gpu_device()
    if found is None:
        pytest.skip("needs a CUDA device (HOOKSCOPE_GPU_CHECK_DEVICE=cpu: a dry run on the CPU)")
    return found
