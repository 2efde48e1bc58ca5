"""Sessions, doctor and capture under DDP, FSDP1 (flat and original parameters) and FSDP2.

Each rank adds a gradient hook on ``layer.linear1.weight`` (a glob on the
name without wrapper components), forward and backward hooks on ``*linear1``,
runs one training forward/backward, then the doctor (backward=True) inside
the same session, then a capture of ``head``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import hookscope
from tests.distributed import workers
from tests.distributed.harness import spawn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("hooks")
    spawn(workers.hooks, str(out))
    return [torch.load(out / f"hooks{rank}.pt", weights_only=False) for rank in (0, 1)]


@pytest.mark.parametrize("variant", workers.VARIANTS)
def test_every_hook_fires_and_the_doctor_blames_none(
    hooked: list[dict[str, Any]], variant: str
) -> None:
    for rank in (0, 1):
        got = hooked[rank][variant]
        # the training step and the doctor's run: each hook fired twice
        assert got["seen"]["forward"] == 2 and got["seen"]["backward"] == 2
        # names as in the unwrapped model (keep_wrappers=True: as the wrapper has them)
        assert [name for name, _shape, _grad in got["seen"]["grad"]] == ["layer.linear1.weight"] * 2
        assert got["names"] == ["layer.linear1"] * 2
        assert got["kept"] == {
            "ddp": "module.layer.linear1",
            "fsdp2": "layer.linear1",
        }.get(variant, "_fsdp_wrapped_module.layer._fsdp_wrapped_module.linear1")
        assert got["silent"] == [] and got["bypasses"] == 0
        assert [ok for _key, ok in got["captured"]] == [True]


@pytest.mark.parametrize("variant", ["ddp", "fsdp1", "fsdp1_orig"])
def test_grad_hooks_see_the_whole_local_gradient_before_the_reduction(
    hooked: list[dict[str, Any]], variant: str
) -> None:
    # FSDP1 flattens linear1.weight into a flat parameter: the hook still gets
    # the original parameter, whole, with this rank's own gradient (as under DDP)
    for rank in (0, 1):
        got = hooked[rank][variant]
        _name, shape, grad = got["seen"]["grad"][0]
        assert shape == (32, 16)
        torch.testing.assert_close(grad, got["ref"], rtol=1e-5, atol=1e-7)


def test_fsdp2_grad_hooks_see_the_local_shard_of_the_reduced_gradient(
    hooked: list[dict[str, Any]],
) -> None:
    reduced = (hooked[0]["fsdp2"]["ref"] + hooked[1]["fsdp2"]["ref"]) / 2
    for rank in (0, 1):
        _name, shape, grad = hooked[rank]["fsdp2"]["seen"]["grad"][0]
        assert shape == (32, 16)  # the DTensor's global shape
        torch.testing.assert_close(grad, reduced[16 * rank : 16 * (rank + 1)], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("variant", workers.VARIANTS)
def test_doctor_capture_and_summary_name_modules_as_the_unwrapped_model(
    hooked: list[dict[str, Any]], variant: str
) -> None:
    plain = [row.name for row in hookscope.summary(workers.Tiny(), workers.batch(0, 0)).rows]
    for rank in (0, 1):
        got = hooked[rank][variant]
        # FSDP1 (both modes) hooks the flat parameter: listed under the original parameter
        assert got["doctor"] == [
            ("layer.linear1", "backward", 1),
            ("layer.linear1", "forward", 1),
            ("layer.linear1", "forward_pre", 1),
            ("layer.linear1.weight", "post_accumulate_grad", 1),
        ]
        assert [key for key, _ok in got["captured"]] == ["head"]
        assert got["rows"] == plain
