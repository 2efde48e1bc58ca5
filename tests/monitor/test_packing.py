"""What ``ranks="reduce"`` sends: packed vectors, combined as the all-reduces combine them.

SUM and MAX are applied here to the vectors two "ranks" pack (what gloo or
NCCL do elementwise), so the arithmetic is checked without a process group;
tests/distributed run it on real ones.
"""

from __future__ import annotations

import math
import pickle

import pytest
import torch

from hookscope.monitor import packing
from hookscope.monitor.deferred import DeferredResult
from hookscope.monitor.records import Record, StepResult
from hookscope.stats import ALL_STATS, fetch, plan_for, reduce_tensor, summarize


def _reduced(t: torch.Tensor) -> object:
    red = reduce_tensor(t, plan_for(ALL_STATS, "count"))
    fetch([red])
    return red


def test_two_halves_combine_into_the_whole_tensor() -> None:
    torch.manual_seed(0)
    whole = torch.randn(1000) * 3 + 5  # a large mean: the shifted moments must add exactly
    whole[::7] = 0.0
    halves = [_reduced(whole[:400]), _reduced(whole[400:])]
    keys = [("forward", "fc", "output"), ("forward", "absent", "output")]
    packed = [packing.pack([red, None], [1, 1], [], True) for red in halves]
    sums, maxes = [s for s, _ in packed], [m for _, m in packed]
    mine = halves[0]
    merged = {keys[0]: mine}
    packing.unpack(keys, merged, sums[0] + sums[1], torch.maximum(*maxes).tolist())
    got, expected = summarize(mine), summarize(_reduced(whole))
    for stat in ("mean", "std", "min", "max", "absmax", "rms", "zero_frac"):
        assert got[stat] == pytest.approx(expected[stat], rel=1e-9), stat


def test_the_first_nonfinite_location_with_the_lowest_code_wins_a_max() -> None:
    slots = packing.text_slots(40)
    rank0 = packing.encode_first(5.0, "decoder.layers.3.mlp\0output[0]", slots)  # phase 2, say
    rank1 = packing.encode_first(1.0, "blocks.0.attn\0output", slots)
    none = packing.encode_first(math.inf, "", slots)
    combined = [max(values) for values in zip(rank0, rank1, none, strict=True)]
    assert packing.decode_first(combined) == (1.0, "blocks.0.attn\0output")
    assert packing.decode_first(none) == (math.inf, "")
    assert all(v < 2**53 for v in combined)  # exact in float64
    cut = packing.decode_first(packing.encode_first(0.0, "é" * 40, slots))[1]
    assert cut.startswith("é" * 19) and len(cut.encode()) <= 3 * slots


def _result(step: int, value: float) -> StepResult:
    return StepResult(step, (Record("forward", "fc", "output", "max", value),), (), None)


def test_a_deferred_result_completes_once_on_first_read() -> None:
    calls, published = [], []

    def complete() -> StepResult:
        calls.append(1)
        return _result(3, 2.5)

    result = DeferredResult.pending(complete, published.append, step=3, tensors=(), rank=1)
    assert (result.step, result.rank) == (3, 1) and calls == []  # known fields: no wait
    assert result.records[0].value == 2.5 and result.alerts == ()
    result.settle()
    assert calls == [1] and published == [result]
    assert pickle.loads(pickle.dumps(result)) == StepResult(3, result.records, (), None, (), 1)


def test_a_deferred_result_that_failed_raises_again_on_every_read() -> None:
    def complete() -> StepResult:
        raise RuntimeError("the other ranks never came")

    result = DeferredResult.pending(complete, lambda _r: None, step=0, tensors=())
    for _ in range(2):
        with pytest.raises(RuntimeError, match="never came"):
            _ = result.records
    assert result.failed
