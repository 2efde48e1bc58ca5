"""Multiply-accumulate formulas per ATen op, and what every other op is.

Convention (torchvision's published model statistics): count the
multiply-accumulates of convolutions, linear layers, matrix products and
attention; ignore bias additions, elementwise ops, normalisation, pooling
and softmax. FLOPs are reported as 2 x MACs.

The formulas see ops *after* PyTorch's composite decompositions, so
``F.linear`` arrives as ``addmm``/``mm``/``bmm``, ``torch.matmul``, ``@`` and
``einsum`` as ``mm``/``bmm``/``mv``/``dot``, and ``scaled_dot_product_attention``
as one of the fused ``_scaled_dot_product_*`` kernels (or, on the meta device,
as the math path's ``bmm`` pair). Fused kernels that never decompose
(``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``) have
their own formula: missing them is why ``FlopCounterMode`` under ``no_grad``
counts a ViT-B/16 at 11.27 instead of 17.56 GMACs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import torch

aten = torch.ops.aten

Formula = Callable[[Sequence[Any], dict[str, Any], Any], int]
OpCategory = Literal["free", "convention", "unknown"]


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(map(int, value.shape))  # SymInts too


def _mm(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    m, k = _shape(args[0])
    n = _shape(args[1])[-1]
    return m * k * n


def _addmm(args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> int:
    return _mm(args[1:], kwargs, out)


def _bmm(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    b, m, k = _shape(args[0])
    n = _shape(args[1])[-1]
    return b * m * k * n


def _baddbmm(args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> int:
    return _bmm(args[1:], kwargs, out)


def _mv(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    m, k = _shape(args[0])
    return m * k


def _addmv(args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> int:
    return _mv(args[1:], kwargs, out)


def _dot(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    return int(args[0].numel())


def _conv(input_: Any, weight: Any, out: Any, transposed: bool) -> int:
    # weight: (C_out, C_in/groups, *k) or, transposed, (C_in, C_out/groups, *k).
    w = _shape(weight)
    per_element = w[1] * math.prod(w[2:])
    if transposed:
        return int(input_.numel()) * per_element
    return int(out.numel()) * per_element


def _convolution(args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> int:
    transposed = bool(args[6]) if len(args) > 6 else bool(kwargs.get("transposed", False))
    return _conv(args[0], args[1], out, transposed)


def _conv_plain(args: Sequence[Any], _kwargs: dict[str, Any], out: Any) -> int:
    return _conv(args[0], args[1], out[0] if isinstance(out, (tuple, list)) else out, False)


def _sdpa(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    # q: (..., L_q, E), k: (..., L_k, E), v: (..., L_k, E_v); heads of q (GQA-safe).
    q, k, v = _shape(args[0]), _shape(args[1]), _shape(args[2])
    return math.prod(q[:-2]) * q[-2] * k[-2] * (q[-1] + v[-1])


def _mha_macs(batch: int, l_q: int, l_k: int, embed: int) -> int:
    projections = batch * (l_q + 2 * l_k) * embed * embed + batch * l_q * embed * embed
    attention = batch * l_q * l_k * embed * 2  # QK^T and AV over all heads
    return projections + attention


def _batch_len(value: Any) -> tuple[int, int]:
    shape = _shape(value)
    if len(shape) == 2:  # unbatched (L, E)
        return 1, shape[0]
    return shape[0], shape[1]


def _native_mha(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    # The fused inference path of nn.MultiheadAttention (batch-first here).
    batch, l_q = _batch_len(args[0])
    _, l_k = _batch_len(args[1])
    return _mha_macs(batch, l_q, l_k, int(args[3]))


def _encoder_layer(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    # The fused inference path of nn.TransformerEncoderLayer: self-attention + FFN.
    batch, length = _batch_len(args[0])
    embed = int(args[1])
    hidden = _shape(args[14])[0]
    return _mha_macs(batch, length, length, embed) + 2 * batch * length * embed * hidden


def _rnn_layer(args: Sequence[Any], _kwargs: dict[str, Any], _out: Any) -> int:
    # One fused RNN layer (oneDNN on CPU): every (step, batch) position runs
    # the input-hidden and hidden-hidden matrices once.
    input_, w_ih, w_hh = args[0], args[1], args[2]
    positions = int(input_.numel()) // int(input_.shape[-1])
    return positions * (int(w_ih.numel()) + int(w_hh.numel()))


def _formulas() -> dict[Any, Formula]:
    table: dict[Any, Formula] = {
        aten.mm.default: _mm,
        aten.addmm.default: _addmm,
        aten.bmm.default: _bmm,
        aten.baddbmm.default: _baddbmm,
        aten.addbmm.default: _baddbmm,
        aten.mv.default: _mv,
        aten.addmv.default: _addmv,
        aten.dot.default: _dot,
        aten.vdot.default: _dot,
        aten.convolution.default: _convolution,
        aten._convolution.default: _convolution,
        aten._native_multi_head_attention.default: _native_mha,
        aten._transformer_encoder_layer_fwd.default: _encoder_layer,
    }
    optional = {
        "_addmm_activation": _addmm,
        "_int_mm": _mm,
        "cudnn_convolution": _conv_plain,
        "mkldnn_convolution": _conv_plain,
        "_slow_conv2d_forward": _conv_plain,
        "_scaled_dot_product_flash_attention_for_cpu": _sdpa,
        "_scaled_dot_product_flash_attention": _sdpa,
        "_scaled_dot_product_efficient_attention": _sdpa,
        "_scaled_dot_product_cudnn_attention": _sdpa,
        "_scaled_dot_product_fused_attention_overrideable": _sdpa,
        "_flash_attention_forward": _sdpa,
        "_efficient_attention_forward": _sdpa,
        "mkldnn_rnn_layer": _rnn_layer,
    }
    for name, formula in optional.items():
        packet = getattr(aten, name, None)
        if packet is not None:
            for overload in packet.overloads():
                table[getattr(packet, overload)] = formula
    return table


#: ATen op overload -> formula(args, kwargs, output) -> MACs.
FORMULAS: dict[Any, Formula] = _formulas()

# Ops that cost no arithmetic: allocation, copies, layout and indexing.
_FREE_NAMES = frozenset(
    [
        "empty",
        "empty_like",
        "empty_strided",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "arange",
        "rand",
        "randn",
        "randint",
        "rand_like",
        "randn_like",
        "uniform_",
        "normal_",
        "bernoulli_",
        "fill_",
        "zero_",
        "clone",
        "copy_",
        "_to_copy",
        "to",
        "contiguous",
        "cat",
        "stack",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "index",
        "index_select",
        "gather",
        "scatter",
        "scatter_",
        "index_put_",
        "index_copy_",
        "embedding",
        "_unsafe_view",
        "lift_fresh",
        "detach",
        "alias",
        "roll",
        "flip",
        "repeat",
        "constant_pad_nd",
        "slice_scatter",
        "select_scatter",
        "tril",
        "triu",
        "masked_fill",
        "masked_fill_",
        "where",
        "_local_scalar_dense",
        "native_dropout",
        "dropout",
        "lift_fresh_copy",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "scalar_tensor",
        "_assert_async",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "set_",
        "resize_",
        "_reshape_alias",
        "item",
        "nonzero",
        "one_hot",
        "unsafe_split",
        "unsafe_split_with_sizes",
        "unsafe_chunk",
        "transpose_",
        "t_",
        "squeeze_",
        "unsqueeze_",
        "as_strided_",
        "detach_",
        "resize_as_",
        "_unsafe_index",
    ]
)

# Ops with real arithmetic that the MAC convention leaves out.
_CONVENTION_PREFIXES = (
    "native_batch_norm",
    "_native_batch_norm_legit",
    "native_layer_norm",
    "native_group_norm",
    "_fused_rms_norm",
    "_softmax",
    "_log_softmax",
    "_safe_softmax",
    "max_pool",
    "avg_pool",
    "adaptive_avg_pool",
    "_adaptive_avg_pool",
    "adaptive_max_pool",
    "mean",
    "sum",
    "amax",
    "amin",
    "var",
    "std",
    "norm",
    "linalg_vector_norm",
    "cumsum",
    "cumprod",
    "upsample_",
    "prod",
    "max",
    "min",
    "any",
    "all",
    "logsumexp",
    "argmax",
    "argmin",
    "topk",
    "sort",
)


@functools.cache
def op_name(func: Any) -> str:
    """``aten::add.Tensor`` → ``"aten.add.Tensor"`` (the form ``str(func)`` gives)."""
    return str(func)


@functools.cache
def categorize(func: Any) -> OpCategory:
    """What an op without a MAC formula is.

    Returns:
        ``"free"`` for views, allocation, copies and indexing; ``"convention"``
        for arithmetic the MAC convention excludes (elementwise, normalisation,
        pooling, softmax, reductions); ``"unknown"`` for anything else — ops
        with a cost hookscope has no formula for, listed in every summary.
    """
    base = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
    if getattr(func, "is_view", False) or base in _FREE_NAMES:
        return "free"
    if torch.Tag.pointwise in getattr(func, "tags", ()):
        return "convention"
    if base.startswith(_CONVENTION_PREFIXES):
        return "convention"
    return "unknown"
