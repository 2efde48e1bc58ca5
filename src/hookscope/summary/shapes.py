"""Output shapes of common ops without their meta kernels.

Many of PyTorch's meta kernels are Python decompositions: ``batch_norm``,
``layer_norm``, ``gelu``, ``hardswish``, ``addmm`` and the pointwise ops
through ``torch._refs`` cost 0.1-20 ms each on the first call of a shape
(and the first one also imports ``torch._dynamo``, about 0.7 s). `OpCache`
asks `RULES` first on a miss: each rule gives the outputs' shape, strides and
dtype for the plain cases (row-major inputs of one floating dtype, and a few
layouts whose outputs are known: broadcasting, permuted pointwise inputs, any
layer-norm input) exactly as the meta kernel would, and None for anything
else, which then runs the kernel. ``tests/summary/test_shapes.py`` holds
every rule to the kernel's answer, on random shapes where there are many.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

aten = torch.ops.aten

Spec = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]


class Outputs(tuple[Spec, ...]):
    """The specs of an op that returns several tensors (a spec is a tuple too)."""


Rule = Callable[[tuple[Any, ...], dict[str, Any]], "Spec | Outputs | None"]

_LOW = (torch.float16, torch.bfloat16)
_FLOATS = frozenset((torch.float16, torch.bfloat16, torch.float32, torch.float64))


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a contiguous tensor of ``shape`` as PyTorch makes them."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(shape[i + 1], 1)
    return tuple(strides)


def _dense(value: Any, floating: bool = True) -> bool:
    """A meta tensor laid out row-major (of a floating dtype when ``floating``)."""
    return (
        isinstance(value, torch.Tensor)
        and value.is_meta
        and (value.dtype in _FLOATS or not floating)
        and value.storage_offset() == 0
        and value.stride() == row_major(value.shape)
    )


def _floating_meta(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_meta and value.dtype in _FLOATS


def _like(t: torch.Tensor) -> Spec:
    shape = tuple(t.shape)
    return shape, row_major(shape), t.dtype


def _fresh(shape: tuple[int, ...], dtype: torch.dtype) -> Spec:
    return shape, row_major(shape), dtype


def _opmath(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in _LOW else dtype


def _unary(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    """Pointwise ops of one floating tensor and plain numbers: same shape and dtype.

    A permuted dense input (a transposed or channels-last tensor) with no
    size-1 dimension keeps its strides, as TensorIterator keeps them.
    """
    x = args[0]
    if not all(_number(a) for a in (*args[1:], *kwargs.values())):
        return None
    if _dense(x):
        return _like(x)
    if _floating_meta(x) and _permuted_dense(x):
        return tuple(x.shape), x.stride(), x.dtype
    return None


def _permuted_dense(x: torch.Tensor) -> bool:
    """A row-major layout with its dimensions reordered, every one longer than 1, at offset 0."""
    if x.storage_offset() or any(n < 2 for n in x.shape):
        return False
    order = sorted(range(x.dim()), key=lambda i: x.stride(i), reverse=True)
    shape = [x.shape[i] for i in order]
    return [x.stride(i) for i in order] == list(row_major(shape))


def _any_dtype(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    """``tril``/``triu``: the dtype is kept whatever it is (masks are bool or int)."""
    if kwargs or not _dense(args[0], floating=False) or not all(_number(a) for a in args[1:]):
        return None
    return _like(args[0])


def _number(value: Any) -> bool:
    return type(value) in (int, float, bool, str)


def _softmax(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    # _softmax(x, dim, half_to_float) / _safe_softmax(x, dim, dtype=None)
    if kwargs.get("dtype") is not None or (len(args) > 2 and args[2] not in (False, None)):
        return None
    return _unary(args[:2], {})


def _binary(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    """Two row-major floating tensors of one dtype, broadcast: a fresh row-major output."""
    if set(kwargs) - {"alpha"} or len(args) != 2:
        return None
    a, b = args
    if not (_dense(a) and _dense(b)) or a.dtype != b.dtype:
        return None
    shape = _broadcast(tuple(a.shape), tuple(b.shape))
    return None if shape is None else _fresh(shape, a.dtype)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + b
    shape = []
    for m, n in zip(a, b, strict=True):
        if m != n and 1 not in (m, n):
            return None
        shape.append(n if m == 1 else m)
    return tuple(shape)


def _matmul(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    """``mm`` (n, k) @ (k, m) and ``bmm`` (b, n, k) @ (b, k, m): fresh row-major outputs."""
    if kwargs or len(args) != 2:
        return None
    a, b = args
    if not all(isinstance(t, torch.Tensor) and t.is_meta for t in (a, b)):
        return None
    if a.dtype != b.dtype or a.dtype not in _FLOATS or a.dim() != b.dim():
        return None
    if a.dim() == 2 and a.shape[1] == b.shape[0]:
        return _fresh((a.shape[0], b.shape[1]), a.dtype)
    if a.dim() == 3 and a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1]:
        return _fresh((a.shape[0], a.shape[1], b.shape[2]), a.dtype)
    return None


def _addmm(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    # addmm(bias, a, b, *, beta, alpha): a linear layer's op
    if set(kwargs) - {"beta", "alpha"} or len(args) != 3:
        return None
    bias, a, b = args
    spec = _matmul((a, b), {})
    if spec is None or a.dim() != 2 or not isinstance(bias, torch.Tensor) or not bias.is_meta:
        return None
    if bias.dtype != a.dtype or tuple(bias.shape) not in ((spec[0][1],), spec[0]):
        return None
    return spec


def _optional_of_shape(values: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """Each of ``values`` is None or a tensor of ``shape`` (weights, biases, statistics)."""
    return all(v is None or (isinstance(v, torch.Tensor) and v.shape == shape) for v in values)


def _batch_norm(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outputs | None:
    # native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps)
    x = args[0]
    if kwargs or not _dense(x) or x.dim() < 2:
        return None
    channels = (x.shape[1],)
    if not _optional_of_shape(args[1:5], channels):
        return None
    stats = _fresh(channels, _opmath(x.dtype))
    return Outputs((_like(x), stats, stats))


def _layer_norm(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outputs | None:
    # native_layer_norm(x, normalized_shape, weight, bias, eps)
    x, normalized = args[0], args[1]  # any layout: the kernel works on a contiguous copy
    if kwargs or not _floating_meta(x) or not isinstance(normalized, (list, tuple)):
        return None
    axis = x.dim() - len(normalized)
    if axis < 0 or tuple(x.shape[axis:]) != tuple(normalized):
        return None
    if not _optional_of_shape(args[2:4], tuple(normalized)):
        return None
    stats = _fresh((*x.shape[:axis], *([1] * len(normalized))), _opmath(x.dtype))
    return Outputs((_like(x), stats, stats))


def _mean(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    # mean.dim(x, dim, keepdim=False, *, dtype=None)
    x = args[0]
    dims = args[1] if len(args) > 1 else None
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if set(kwargs) - {"keepdim"} or not _dense(x) or x.dim() == 0:
        return None
    if not isinstance(dims, (list, tuple)) or not dims or not all(type(d) is int for d in dims):
        return None
    if not all(-x.dim() <= d < x.dim() for d in dims):
        return None
    reduced = {d % x.dim() for d in dims}
    if len(reduced) != len(dims):
        return None
    shape = [1 if i in reduced else n for i, n in enumerate(x.shape)]
    if not keepdim:
        shape = [n for i, n in enumerate(shape) if i not in reduced]
    return _fresh(tuple(shape), x.dtype)


def _cat(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    # cat(tensors, dim=0)
    tensors = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    if set(kwargs) - {"dim"} or not isinstance(tensors, (list, tuple)) or not tensors:
        return None
    if not all(_dense(t) for t in tensors) or type(dim) is not int:
        return None
    first = tensors[0]
    rank = first.dim()
    if rank == 0 or not -rank <= dim < rank:
        return None
    dim %= rank
    for t in tensors:
        if t.dtype != first.dtype or t.dim() != rank or t.numel() == 0:
            return None
        if any(t.shape[i] != first.shape[i] for i in range(rank) if i != dim):
            return None
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return _fresh(tuple(shape), first.dtype)


def _convolution(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Spec | None:
    # convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if kwargs or len(args) != 9:
        return None
    x, weight, bias, stride, padding, dilation, transposed, _, groups = args
    if transposed or not (_dense(x) and _dense(weight)) or x.dtype != weight.dtype:
        return None
    spatial = x.dim() - 2
    if spatial < 1 or weight.dim() != x.dim() or type(groups) is not int or groups < 1:
        return None
    if not all(len(v) == spatial for v in (stride, padding, dilation)):
        return None
    if x.shape[1] != weight.shape[1] * groups or weight.shape[0] % groups:
        return None
    if bias is not None and not (
        isinstance(bias, torch.Tensor) and bias.shape == weight.shape[:1] and bias.dtype == x.dtype
    ):
        return None
    sizes = []
    for i in range(spatial):
        span = dilation[i] * (weight.shape[2 + i] - 1) + 1
        size = (x.shape[2 + i] + 2 * padding[i] - span) // stride[i] + 1
        if size < 1:
            return None  # the kernel raises: let it
        sizes.append(size)
    return _fresh((x.shape[0], weight.shape[0], *sizes), x.dtype)


def _max_pool2d(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outputs | None:
    # max_pool2d_with_indices(x, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)
    x = args[0]
    if kwargs or not _dense(x) or x.dim() not in (3, 4) or not 2 <= len(args) <= 6:
        return None
    defaults: tuple[Any, ...] = ([], [0], [1], False)  # stride (= kernel), padding, ...
    kernel, stride, padding, dilation, ceil_mode = (*args[1:], *defaults[len(args) - 2 :])
    pairs = [p for v in (kernel, stride or kernel, padding, dilation) if (p := _pair(v))]
    if len(pairs) != 4 or type(ceil_mode) is not bool:
        return None
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = pairs
    if min(kh, kw, sh, sw, dh, dw) < 1 or ph < 0 or pw < 0 or 2 * ph > kh or 2 * pw > kw:
        return None  # the kernel raises: let it
    height = _pooled(x.shape[-2], kh, sh, ph, dh, ceil_mode)
    width = _pooled(x.shape[-1], kw, sw, pw, dw, ceil_mode)
    if height < 1 or width < 1:
        return None
    shape = (*x.shape[:-2], height, width)
    return Outputs((_fresh(shape, x.dtype), _fresh(shape, torch.int64)))


def _pair(value: Any) -> tuple[int, int] | None:
    if not isinstance(value, (list, tuple)) or not all(type(v) is int for v in value):
        return None
    if len(value) == 1:
        return value[0], value[0]
    return (value[0], value[1]) if len(value) == 2 else None


def _pooled(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil: bool) -> int:
    """PyTorch's pooling output size (``pooling_output_shape``)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil else 0)
    out = span // stride + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _table() -> dict[Any, Rule]:
    rules: dict[Any, Rule] = {}
    for name in (
        "relu",
        "gelu",
        "silu",
        "sigmoid",
        "tanh",
        "hardtanh",
        "hardswish",
        "hardsigmoid",
        "leaky_relu",
        "elu",
        "mish",
        "neg",
        "exp",
        "rsqrt",
        "sqrt",
    ):
        rules[getattr(aten, name).default] = _unary
    for op in (aten.mul.Scalar, aten.add.Scalar, aten.div.Scalar, aten.pow.Tensor_Scalar):
        rules[op] = _unary
    for op in (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor):
        rules[op] = _binary
    rules[aten.tril.default] = rules[aten.triu.default] = _any_dtype
    rules[aten._softmax.default] = rules[aten._safe_softmax.default] = _softmax
    rules[aten._log_softmax.default] = _softmax
    rules[aten.mm.default] = rules[aten.bmm.default] = _matmul
    rules[aten.addmm.default] = _addmm
    rules[aten.native_batch_norm.default] = _batch_norm
    rules[aten.native_layer_norm.default] = _layer_norm
    rules[aten.mean.dim] = _mean
    rules[aten.cat.default] = _cat
    rules[aten.convolution.default] = _convolution
    rules[aten.max_pool2d_with_indices.default] = _max_pool2d
    return rules


#: op overload -> rule giving its outputs' specs, or None to run the kernel
RULES: dict[Any, Rule] = _table()
