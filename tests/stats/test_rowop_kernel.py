"""`hookscope.stats.rowop`: rows the C kernel writes into the buffer equal the Python path's bit for bit."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch

from hookscope.stats import cpuops, native, rowop
from hookscope.stats.rowop import affine_row_op, grad_rows_op, merge_row_op, move_row_op
from hookscope.stats.traced import empty_rows

pytestmark = pytest.mark.skipif(
    not native.available(), reason=f"native kernel unavailable: {native.why_unavailable()}"
)
_SEED = torch.Generator().manual_seed(0)


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_SEED)


TENSORS = {
    "nchw": _randn(8, 16, 20, 20),
    "channels-last": _randn(8, 16, 20, 20).to(memory_format=torch.channels_last),
    "large mean": _randn(7, 3) + 100.0,
    "float64": _randn(1000).double(),
    "float16": _randn(300).half(),
    "bfloat16": _randn(300).bfloat16(),
    "all negative": -torch.rand(100, generator=_SEED),
    "nan": torch.tensor([1.0, float("nan"), 2.0]),
    "inf": torch.tensor([float("inf"), 2.0]),
    "huge": _randn(5) * 1e30,
}


#: How the ops' CPU kernels run: C++ kernels (`cpuops`), Python kernels calling the C
#: kernel, Python kernels merging in Python. Each is compared with the last.
PATHS = ("c++", "kernel", "python")


@pytest.fixture
def paths() -> Iterator[Callable[[str], None]]:
    """``set(path)``: rows by one of `PATHS`."""
    if not cpuops.ensure():
        pytest.skip(f"C++ op kernels unavailable: {cpuops.why_unavailable()}")
    real = rowop.KERNEL_ROWS

    def choose(path: str) -> None:
        rowop.set_kernel_rows(path != "python")
        cpuops.set_enabled(path == "c++")

    yield choose
    rowop.set_kernel_rows(real)
    cpuops.set_enabled(True)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit, NaN where NaN."""
    return bool((a.isnan() == b.isnan()).all()) and torch.equal(a.nan_to_num(), b.nan_to_num())


def _buffer() -> torch.Tensor:
    rows = empty_rows(4)
    rows[1] = torch.arange(9.0)  # a row with something merged in already
    return rows


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("name", list(TENSORS))
def test_merged_and_gradient_rows_match_the_python_path(
    name: str, relu: bool, paths: Callable[[str], None]
) -> None:
    x = TENSORS[name]
    got = []
    for path in PATHS:
        paths(path)
        rows = _buffer()
        for index in (0, 1, 0):
            merge_row_op(rows, index, x, True, True, True, relu)
        got.append((rows, grad_rows_op(x, 2, 4, torch.float64)))
    *others, (rows_p, grad_p) = got
    for rows, grad in others:
        assert _same(rows, rows_p)
        assert _same(grad, grad_p)


@pytest.mark.parametrize("relu_index", [-1, 3])
@pytest.mark.parametrize(
    "x",
    [
        _randn(8, 16, 20, 20),
        _randn(8, 16, 20, 20).to(memory_format=torch.channels_last),
        _randn(32, 512) + 3.0,
        _randn(4, 3, 5),
    ],
)
def test_affine_rows_match_the_python_path(
    x: torch.Tensor, relu_index: int, paths: Callable[[str], None]
) -> None:
    channels = x.shape[1]
    mean, bias = _randn(channels), _randn(channels)
    scale = torch.rand(channels, generator=_SEED) + 0.5
    got = []
    for path in PATHS:
        paths(path)
        rows = _buffer()
        for index in (1, 0):
            affine_row_op(rows, index, x, mean, scale, bias, True, True, True, relu_index)
        got.append(rows)
    assert torch.equal(got[0], got[2])
    assert torch.equal(got[1], got[2])


def test_the_kernel_writes_finite_dense_rows_and_leaves_the_rest_to_python() -> None:
    x = TENSORS["channels-last"]
    rows = empty_rows(4)
    assert rowop._kernel_merge(rows, 2, x, relu=True)
    assert rowop._kernel_grad(torch.zeros(4, 4, dtype=torch.float64), 3, x)
    assert not rowop._kernel_merge(rows, 2, TENSORS["nan"], relu=False)  # counted by tensor ops
    assert not rowop._kernel_merge(rows, 2, x[:, :, ::2], relu=False)  # not dense
    assert not rowop._kernel_merge(rows, 4, x, relu=False)  # out of range: Python raises
    assert not rowop._kernel_merge(rows.float(), 0, x, relu=False)  # not a float64 buffer
    assert not rowop._kernel_grad(torch.zeros(4, 4), 0, x)


def test_moved_rows_match_the_python_path(paths: Callable[[str], None]) -> None:
    """``move_row_`` by the kernel (``hs_move_row``): the same merge, and an emptied source."""
    got = []
    for path in PATHS:
        paths(path)
        rows = _buffer()
        rows[3] = torch.tensor([1.0, 5.0, -2.0, 7.0, -3.0, 0.5, 4.0, 0.0, 0.0])
        move_row_op(rows, 3, 1)
        move_row_op(rows, 3, 0)  # the emptied row moved on: only neutral values
        move_row_op(rows, 1, 1)  # onto itself: Python's path (the kernel needs two rows)
        got.append(rows)
    assert _same(got[0], got[2])
    assert _same(got[1], got[2])
    assert _same(got[0][3], empty_rows(1)[0])
