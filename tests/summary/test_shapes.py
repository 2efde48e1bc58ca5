"""Every shape rule gives exactly the meta kernel's outputs, or declines."""

from __future__ import annotations

import itertools
import subprocess
import sys
from typing import Any

import pytest
import torch

from hookscope.summary import shapes
from hookscope.summary.shapes import RULES, Outputs, row_major

aten = torch.ops.aten


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(shape, device="meta", dtype=dtype)


def spec_of(out: Any) -> Any:
    if isinstance(out, tuple):
        return Outputs(spec_of(t) for t in out)
    return tuple(out.shape), out.stride(), out.dtype


x4, x3, half = meta(2, 8, 5, 5), meta(2, 3, 8), meta(2, 8, 5, dtype=torch.float16)
channels_last = x4.to(memory_format=torch.channels_last)
size_one = meta(1, 1, 4)
c8 = meta(8)

#: (op, args, kwargs, whether the rule must answer)
CASES: list[tuple[Any, tuple[Any, ...], dict[str, Any], bool]] = [
    (aten.relu.default, (x4,), {}, True),
    (aten.relu.default, (size_one,), {}, True),
    (aten.relu.default, (channels_last,), {}, True),
    (aten.relu.default, (x3.transpose(1, 2),), {}, True),
    (aten.relu.default, (size_one.transpose(0, 2),), {}, False),
    (aten.relu.default, (meta(3, dtype=torch.int64),), {}, False),
    (aten.gelu.default, (x3,), {"approximate": "tanh"}, True),
    (aten.gelu.default, (half,), {}, True),
    (aten.sigmoid.default, (meta(4, dtype=torch.int32),), {}, False),
    (aten.hardtanh.default, (x4, 0.0, 6.0), {}, True),
    (aten.hardswish.default, (x4,), {}, True),
    (aten.leaky_relu.default, (x3, 0.2), {}, True),
    (aten.mul.Scalar, (x3, 0.5), {}, True),
    (aten.mul.Scalar, (meta(3, dtype=torch.int64), 0.5), {}, False),
    (aten.pow.Tensor_Scalar, (x3, 2), {}, True),
    (aten.add.Tensor, (x3, meta(2, 3, 8)), {}, True),
    (aten.add.Tensor, (x3, meta(2, 3, 8)), {"alpha": 2}, True),
    (aten.add.Tensor, (x3, meta(3, 8)), {}, True),
    (aten.mul.Tensor, (meta(1, 11, 1, 1), meta(1, 1, 5, 5)), {}, True),
    (aten.mul.Tensor, (meta(1, 11, 1, 1), x4[:1, :1]), {}, False),
    (aten.add.Tensor, (x3, meta(4, 8)), {}, False),
    (aten.add.Tensor, (x3, meta(2, 3, 8, dtype=torch.float64)), {}, False),
    (aten.mul.Tensor, (x4, channels_last), {}, False),
    (aten.div.Tensor, (meta(3, dtype=torch.int64), meta(3, dtype=torch.int64)), {}, False),
    (aten.tril.default, (meta(4, 4, dtype=torch.bool),), {}, True),
    (aten.triu.default, (meta(4, 4), 1), {}, True),
    (aten._softmax.default, (x3, -1, False), {}, True),
    (aten._softmax.default, (meta(2, 3, dtype=torch.float16), -1, True), {}, False),
    (aten._safe_softmax.default, (x4, -1), {}, True),
    (aten._safe_softmax.default, (x4, -1), {"dtype": torch.float64}, False),
    (aten._log_softmax.default, (x3, 1, False), {}, True),
    (aten.mm.default, (meta(1, 3), meta(4, 3).t()), {}, True),
    (aten.mm.default, (meta(5, 3), meta(3, 4)), {}, True),
    (aten.bmm.default, (meta(2, 5, 3), meta(2, 3, 4).transpose(1, 2).contiguous().mT), {}, True),
    (aten.mm.default, (meta(5, 3), meta(3, 4, dtype=torch.float64)), {}, False),
    (aten.addmm.default, (meta(4), meta(1, 3), meta(4, 3).t()), {}, True),
    (aten.addmm.default, (meta(2, 4), meta(2, 3), meta(3, 4)), {"beta": 0.5}, True),
    (aten.addmm.default, (meta(1, 4), meta(2, 3), meta(3, 4)), {}, False),
    (
        aten.native_batch_norm.default,
        (x4, c8, c8, meta(8), meta(8), False, 0.1, 1e-5),
        {},
        True,
    ),
    (aten.native_batch_norm.default, (x4, None, None, None, None, True, 0.1, 1e-5), {}, True),
    (
        aten.native_batch_norm.default,
        (half, None, None, meta(8), meta(8), False, 0.1, 1e-5),
        {},
        True,
    ),
    (
        aten.native_batch_norm.default,
        (channels_last, None, None, meta(8), meta(8), False, 0.1, 1e-5),
        {},
        False,
    ),
    (aten.native_layer_norm.default, (x3, [8], meta(8), meta(8), 1e-5), {}, True),
    (
        aten.native_layer_norm.default,
        (meta(2, 3, 8, dtype=torch.bfloat16), [3, 8], None, None, 1e-5),
        {},
        True,
    ),
    (aten.native_layer_norm.default, (x3, [8], meta(7), None, 1e-5), {}, False),
    (aten.native_layer_norm.default, (x4.permute(0, 2, 3, 1), [8], c8, c8, 1e-5), {}, True),
    (aten.native_layer_norm.default, (meta(2, 8, 3)[:, 2:5], [3], None, None, 1e-5), {}, True),
    (aten.native_layer_norm.default, (meta(4).expand(3, 4), [4], None, None, 1e-5), {}, True),
    (aten.mean.dim, (x4, [-1, -2], True), {}, True),
    (aten.mean.dim, (x4, [1]), {}, True),
    (aten.mean.dim, (x4, [1]), {"keepdim": True}, True),
    (aten.mean.dim, (x4, [1]), {"dtype": torch.float64}, False),
    (aten.mean.dim, (x4, [1, -3]), {}, False),
    (aten.cat.default, ([x3, meta(2, 5, 8)], 1), {}, True),
    (aten.cat.default, ([x3, x3],), {}, True),
    (aten.cat.default, ([x3, meta(2, 3, 8, dtype=torch.float16)], 0), {}, False),
    (aten.cat.default, ([x3, meta(0)], 0), {}, False),
    (aten.max_pool2d_with_indices.default, (x4, [3, 3], [2, 2], [1, 1], [1, 1], True), {}, True),
    (aten.max_pool2d_with_indices.default, (channels_last, [2, 2]), {}, False),
    (
        aten.convolution.default,
        (x4, meta(4, 8, 3, 3), meta(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        {},
        True,
    ),
    (
        aten.convolution.default,
        (x4, meta(8, 8, 3, 3), None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1),
        {},
        False,
    ),
    (
        aten.convolution.default,
        (channels_last, meta(4, 8, 1, 1), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
        {},
        False,
    ),
    (aten.sub.Tensor, (half, meta(2, 8, 5, dtype=torch.float16)), {}, True),
    (aten.mul.Tensor, (x4, meta(2, 8, 5, 5)), {}, True),
    (aten.div.Tensor, (x4, meta(2, 8, 5, 5)), {}, True),
]
# every pointwise op of one tensor (and a number, for the Scalar overloads)
CASES += [
    (op, (x3, 2) if "Scalar" in op._overloadname else (x3,), {}, True)
    for op, rule in RULES.items()
    if rule is shapes._unary
]


@pytest.mark.parametrize(("op", "args", "kwargs", "answers"), CASES)
def test_rule_matches_the_meta_kernel(
    op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], answers: bool
) -> None:
    got = RULES[op](args, kwargs)
    assert (got is not None) == answers
    if got is not None:
        assert got == spec_of(op(*args, **kwargs))
        assert type(got) is type(spec_of(op(*args, **kwargs)))


def test_every_rule_is_exercised() -> None:
    assert {op for op, _, _, answers in CASES if answers} == set(RULES)


def test_broadcast_binary_ops_match_the_kernel_on_random_shapes() -> None:
    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        rank = int(torch.randint(1, 5, (1,), generator=gen))
        big = [int(n) for n in torch.randint(1, 4, (rank,), generator=gen)]
        small = [n if bool(torch.rand(1, generator=gen) < 0.5) else 1 for n in big]
        small = small[int(torch.randint(0, rank, (1,), generator=gen)) :]
        for a, b in ((big, small), (small, big)):
            args = (meta(*a), meta(*b))
            for op in (aten.add.Tensor, aten.mul.Tensor):
                assert RULES[op](args, {}) == spec_of(op(*args)), (a, b)


def test_convolutions_match_the_kernel_on_random_shapes() -> None:
    gen = torch.Generator().manual_seed(1)

    def pick(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (1,), generator=gen))

    answered = 0
    for _ in range(300):
        spatial, groups = pick(1, 3), pick(1, 3)
        kernel = [pick(1, 3) for _ in range(spatial)]
        args = (
            meta(pick(1, 3), groups * pick(1, 3), *[pick(1, 9) for _ in range(spatial)]),
            meta(groups * pick(1, 3), 0, *kernel),  # in-channels set below
            None,
            [pick(1, 3) for _ in range(spatial)],
            [pick(0, 2) for _ in range(spatial)],
            [pick(1, 2) for _ in range(spatial)],
            False,
            [0] * spatial,
            groups,
        )
        weight = meta(args[1].shape[0], args[0].shape[1] // groups, *kernel)
        bias = meta(weight.shape[0]) if pick(0, 1) else None
        args = (args[0], weight, bias, *args[3:])
        got = RULES[aten.convolution.default](args, {})
        try:
            expected = spec_of(aten.convolution.default(*args))
        except RuntimeError:  # output smaller than one: the rule must leave it to the kernel
            assert got is None
            continue
        assert got == expected, args
        answered += 1
    assert answered > 150


def test_pointwise_ops_on_permuted_inputs_match_the_kernel() -> None:
    unary = [op for op, rule in RULES.items() if rule is shapes._unary]
    answered = 0
    for perm in itertools.permutations(range(4)):
        for shape in [(2, 4, 65, 16), (1, 4, 3, 2), (3, 2, 4, 4)]:
            x = meta(*shape).permute(*perm)
            for op in unary:
                args = (x, 2) if "Scalar" in op._overloadname else (x,)
                got = RULES[op](args, {})
                if got is not None:
                    answered += 1
                    assert got == spec_of(op(*args)), (op, shape, perm)
    assert answered > 500
    assert RULES[aten.relu.default]((meta(4, 6)[:, :3],), {}) is None  # not dense: the kernel


def test_max_pooling_matches_the_kernel_on_random_shapes() -> None:
    gen = torch.Generator().manual_seed(2)

    def pick(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (1,), generator=gen))

    answered = 0
    op = aten.max_pool2d_with_indices.default
    for _ in range(400):
        kernel = [pick(1, 4)] if pick(0, 1) else [pick(1, 4), pick(1, 4)]
        full = (kernel, [pick(1, 3), pick(1, 3)] if pick(0, 1) else [], [pick(0, 2)], [pick(1, 2)])
        args = (meta(*([pick(1, 2)] if pick(0, 1) else []), pick(1, 3), pick(1, 9), pick(1, 9)),)
        args += full[: pick(1, 4)]
        if len(args) == 5 and pick(0, 1):
            args += (bool(pick(0, 1)),)
        got = RULES[op](args, {})
        try:
            expected = spec_of(op(*args))
        except RuntimeError:
            assert got is None, args
            continue
        if got is not None:
            assert got == expected, args
            answered += 1
    assert answered > 150


def test_row_major_strides_are_torchs() -> None:
    for shape in [(2, 3, 4), (1, 1, 4), (3, 0, 2), (5,), ()]:
        assert row_major(shape) == torch.empty(shape).stride()


def test_a_summary_with_norms_and_gelu_leaves_dynamo_unloaded() -> None:
    # torch's Python batch_norm decomposition imports torch._dynamo (about 0.7 s) on first
    # use; the rules answer first, so a fresh process never pays it.
    code = (
        "import sys, torch, hookscope\n"
        "from torch import nn\n"
        "m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.GELU(), nn.Flatten(),"
        " nn.Linear(8 * 6 * 6, 4), nn.LayerNorm(4))\n"
        "s = hookscope.summary(m, input_size=(1, 3, 8, 8))\n"
        "assert s.fallback_reason is None and s.macs > 0, s\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
