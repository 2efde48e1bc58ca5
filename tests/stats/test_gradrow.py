"""`hookscope.stats.gradrow`: gradient rows added into a registered buffer outside the graph."""

from __future__ import annotations

import pytest
import torch

from hookscope.stats import gradrow, native
from hookscope.stats.gradrow import grad_row_add_op
from hookscope.stats.rowop import grad_rows_op
from hookscope.stats.traced import grad_row

_SEED = torch.Generator().manual_seed(0)


@pytest.mark.parametrize(
    "g",
    [
        torch.randn(8, 16, 10, 10, generator=_SEED),
        torch.randn(8, 16, 10, 10, generator=_SEED).to(memory_format=torch.channels_last),
        torch.randn(300, generator=_SEED).double(),
        torch.randn(300, generator=_SEED).bfloat16(),
        torch.randn(12, 10, generator=_SEED)[:, ::2],  # not dense: tensor ops
    ],
    ids=["nchw", "channels-last", "float64", "bfloat16", "strided"],
)
def test_rows_add_up_as_the_sink_gradients_did(g: torch.Tensor) -> None:
    """Two calls into one row give the sum of two ``grad_rows`` rows, bit for bit."""
    buffer = torch.zeros(3, 4, dtype=torch.float64)
    key = gradrow.register(buffer)
    try:
        assert grad_row_add_op(g, key, 1) is None
        grad_row_add_op(g, key, 1)
    finally:
        gradrow.unregister(key)
    once = grad_rows_op(g, 1, 3, torch.float64)
    assert torch.equal(buffer, once + once)
    assert buffer[1, 0] == 2 * g.numel()


def test_nan_and_inf_are_counted_exactly() -> None:
    buffer = torch.zeros(2, 4, dtype=torch.float64)
    key = gradrow.register(buffer)
    g = torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 2.0])
    try:
        grad_row_add_op(g, key, 0)
    finally:
        gradrow.unregister(key)
    assert buffer[0, 0] == 5 and buffer[0, 2] == 1 and buffer[0, 3] == 2
    assert buffer[0, 1].isnan() or buffer[0, 1].isinf()
    assert not buffer[1].any()


def test_other_buffers_take_the_tensor_ops() -> None:
    """A float32 buffer (as on MPS): no kernel, the row of `grad_row` added."""
    buffer = torch.zeros(2, 4)
    key = gradrow.register(buffer)
    g = torch.randn(50, generator=_SEED)
    try:
        grad_row_add_op(g, key, 1)
    finally:
        gradrow.unregister(key)
    assert torch.equal(buffer[1], grad_row(g, torch.float32))


def test_an_unregistered_key_writes_nothing() -> None:
    buffer = torch.zeros(2, 4, dtype=torch.float64)
    key = gradrow.register(buffer)
    gradrow.unregister(key)
    grad_row_add_op(torch.randn(10, generator=_SEED), key, 0)
    grad_row_add_op(torch.empty(0), key, 0)
    assert not buffer.any()


def test_a_buffer_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="rows, 4"):
        gradrow.register(torch.zeros(3, 9, dtype=torch.float64))


@pytest.mark.skipif(not native.available(), reason="native kernel unavailable")
def test_the_kernel_adds_the_row_by_address() -> None:
    buffer = torch.zeros(4, 4, dtype=torch.float64)
    buffer[2] = torch.tensor([1.0, 2.0, 0.0, 0.0])
    key = gradrow.register(buffer)
    g = torch.randn(64, 32, generator=_SEED)
    try:
        grad_row_add_op(g, key, 2)
    finally:
        gradrow.unregister(key)
    expected = grad_rows_op(g, 2, 4, torch.float64)[2] + torch.tensor([1.0, 2.0, 0.0, 0.0])
    assert torch.equal(buffer[2], expected)
    assert not buffer[[0, 1, 3]].any()
