"""`hookscope.stats.rowop`: the row ops give `reduce_row`'s values, whichever path they take."""

from __future__ import annotations

import pytest
import torch

from hookscope.stats import ACTIVATION_STATS, plan_for
from hookscope.stats.native import moments_affine
from hookscope.stats.rowop import (
    affine_row_op,
    grad_rows_op,
    merge_row_op,
    move_row_op,
    relu_row_values,
    row_values,
)
from hookscope.stats.traced import FIELDS, GRAD_FIELDS, empty_rows, grad_row, reduce_row

PLAN = plan_for(ACTIVATION_STATS)
_SEED = torch.Generator().manual_seed(0)


def _merged(t: torch.Tensor, rows: int = 3, index: int = 1) -> dict[str, float]:
    buf = empty_rows(rows)
    merge_row_op(buf, index, t, PLAN.squares, PLAN.extrema, PLAN.zeros != "none")
    untouched = [i for i in range(rows) if i != index]
    torch.testing.assert_close(buf[untouched], empty_rows(len(untouched)))
    return dict(zip(FIELDS, buf[index].tolist(), strict=True))


def _expected(t: torch.Tensor) -> dict[str, float]:
    return dict(zip(FIELDS, reduce_row(t, PLAN, torch.float64).tolist(), strict=True))


def _assert_rows_equal(got: dict[str, float], want: dict[str, float]) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9, nan_ok=True), key


def _activations(dtype: torch.dtype) -> torch.Tensor:
    t = torch.randn(4, 6, 5, 5, generator=_SEED).relu().to(dtype) + 3.0
    t[0, 0] = 0.0  # some zeros
    return t


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_merged_row_equals_reduce_row(dtype: torch.dtype, path: str) -> None:
    t = _activations(dtype)
    assert (row_values(t) is not None) == (path == "native")
    _assert_rows_equal(_merged(t), _expected(t))


def test_a_tensor_the_kernel_does_not_take_gets_tensor_ops() -> None:
    t = _activations(torch.float32)[:, :, ::2]  # not dense
    assert row_values(t) is None
    _assert_rows_equal(_merged(t), _expected(t))


def test_channels_last_tensor_is_reduced_without_copy() -> None:
    t = _activations(torch.float32).to(memory_format=torch.channels_last)
    assert row_values(t) is not None  # the kernel reads any dense layout
    _assert_rows_equal(_merged(t), _expected(t))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_nan_and_inf_are_counted_exactly(dtype: torch.dtype) -> None:
    t = _activations(dtype)
    t[1, 1, 1, 1] = float("nan")
    t[2, 2, 2] = float("inf")  # five of them
    t[3, 3, 3, 3] = float("-inf")
    assert row_values(t) is None  # the sums show it: counted by tensor ops
    row = _merged(t)
    assert (row["nan"], row["inf"]) == (1, 6)
    _assert_rows_equal(row, _expected(t))


@pytest.mark.parametrize(
    "t",
    [torch.tensor([[0, 3, -2], [5, 0, 1]]), torch.tensor([True, False, True])],
    ids=["int", "bool"],
)
def test_integer_and_bool_tensors_take_tensor_ops(t: torch.Tensor) -> None:
    _assert_rows_equal(_merged(t), _expected(t))


def test_rows_merge_across_calls_and_empty_tensors_only_count() -> None:
    buf = empty_rows(2)
    merge_row_op(buf, 0, torch.tensor([-1.0, 2.0]), True, True, True)
    merge_row_op(buf, 0, torch.tensor([0.5, 7.0, 0.0]), True, True, True)
    merge_row_op(buf, 0, torch.empty(0, 3), True, True, True)
    row = dict(zip(FIELDS, buf[0].tolist(), strict=True))
    assert (row["calls"], row["numel"], row["min"], row["max"]) == (3, 5, -1, 7)
    assert (row["sum"], row["sumsq"], row["nonzero"]) == (8.5, 54.25, 4)


def test_grad_rows_put_one_row_in_zeros() -> None:
    g = torch.randn(3, 8, generator=_SEED)
    g[0, 0] = float("inf")
    for grad in (g, g.nan_to_num(0.0, 0.0, 0.0)):
        out = grad_rows_op(grad, 2, 4, torch.float64)
        assert out.shape == (4, len(GRAD_FIELDS))
        torch.testing.assert_close(out[2], grad_row(grad, torch.float64))
        assert not out[[0, 1, 3]].any()


def test_ops_pass_torch_library_checks() -> None:
    """Schemas, fake (meta) implementations and functionalization, as dynamo uses them."""
    x = _activations(torch.float32)
    torch.library.opcheck(merge_row_op, (empty_rows(3), 1, x, True, True, True))
    torch.library.opcheck(grad_rows_op, (x, 1, 3, torch.float64))
    c = torch.ones(x.shape[1])
    torch.library.opcheck(affine_row_op, (empty_rows(3), 1, x, c, c, c, True, True, True, 2))
    torch.library.opcheck(move_row_op, (empty_rows(3), 1, 2))


@pytest.mark.parametrize("path_", ["kernel", "tensor ops"])
def test_relu_rows_from_the_input_equal_the_relu_output_rows(path_: str) -> None:
    x = torch.randn(4, 6, 5, 5, generator=_SEED).to(memory_format=torch.channels_last)
    if path_ == "tensor ops":
        x = x[:, :, ::2]  # not dense
    assert (relu_row_values(x) is not None) == (path_ == "kernel")
    buf = empty_rows(1)
    merge_row_op(buf, 0, x, True, True, True, True)
    got = dict(zip(FIELDS, buf[0].tolist(), strict=True))
    _assert_rows_equal(got, _expected(torch.relu(x)))


def test_relu_rows_of_an_input_with_nan_propagate_it() -> None:
    x = torch.randn(3, 5, generator=_SEED)
    x[1, 1] = float("nan")
    assert relu_row_values(x) is None
    buf = empty_rows(1)
    merge_row_op(buf, 0, x, True, True, True, True)
    row = dict(zip(FIELDS, buf[0].tolist(), strict=True))
    assert row["nan"] == 1
    _assert_rows_equal(row, _expected(torch.relu(x)))


def _affine(x: torch.Tensor, relu_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The op's rows of ``y = (x - mean) * scale + bias`` (per channel) and the tensor ops' rows.

    Row 1 holds ``y``'s row; with ``relu_index`` 2, row 2 holds ``relu(y)``'s
    (the op replaces what was there). The second tensor holds the same rows
    from `reduce_row`.
    """
    channels = x.shape[1]
    mean, bias = torch.randn(2, channels, generator=_SEED)
    scale = torch.randn(channels, generator=_SEED)  # some negative
    buf = empty_rows(3)
    buf[2] = 5.0  # replaced, not merged into
    affine_row_op(buf, 1, x, mean, scale, bias, True, True, True, relu_index)
    shape = [1, channels] + [1] * (x.dim() - 2)
    y = (x - mean.view(shape)) * scale.view(shape) + bias.view(shape)
    want = empty_rows(3)
    want[1] = reduce_row(y, PLAN, torch.float64)
    want[2] = reduce_row(torch.relu(y), PLAN, torch.float64) if relu_index == 2 else 5.0
    return buf, want


@pytest.mark.parametrize("relu_index", [-1, 2], ids=["norm", "norm-and-relu"])
@pytest.mark.parametrize(
    "layout", ["nchw", "channels-last", "2-d", "not dense", "nan", "inf"], ids=lambda s: s
)
def test_affine_rows_equal_the_rows_of_the_normalised_tensor(
    relu_index: int, layout: str, path: str
) -> None:
    x = torch.randn(4, 6, 5, 5, generator=_SEED)
    if layout == "channels-last":
        x = x.to(memory_format=torch.channels_last)
    elif layout == "2-d":
        x = x[:, :, 0, 0].contiguous()
    elif layout == "not dense":
        x = x[:, :, ::2]
    elif layout in ("nan", "inf"):
        x[1, 2, 3, 4] = float(layout)
    one = torch.ones(x.shape[1])
    # the one pass over x where the kernel takes it (NaN and Inf: then y is made and counted)
    takes = moments_affine(x, one, one, one) is not None
    assert takes == (path == "native" and layout != "not dense")
    got, want = _affine(x, relu_index)
    if layout in ("nan", "inf"):
        assert got[1, FIELDS.index(layout)] == 1
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_affine_rows_merge_across_calls_and_a_moved_row_merges_and_empties() -> None:
    x = torch.randn(3, 4, 7, generator=_SEED)
    ones, zeros = torch.ones(4), torch.zeros(4)
    buf = empty_rows(3)
    for _ in range(2):
        affine_row_op(buf, 0, x, zeros, ones, zeros, True, True, True, 1)
        move_row_op(buf, 1, 2)  # a ReLU after each call
    row = dict(zip(FIELDS, buf[0].tolist(), strict=True))
    assert (row["calls"], row["numel"]) == (2, 2 * x.numel())
    assert row["sum"] == pytest.approx(2 * x.double().sum().item())
    relu = dict(zip(FIELDS, buf[2].tolist(), strict=True))
    assert (relu["calls"], relu["sum"]) == (2, pytest.approx(2 * x.relu().double().sum().item()))
    torch.testing.assert_close(buf[1], empty_rows(1)[0])
