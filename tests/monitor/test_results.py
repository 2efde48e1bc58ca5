"""Merging a step's entries: one reduction and one shape per tensor."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch

from hookscope.monitor import results
from hookscope.monitor.entries import Entry
from hookscope.monitor.records import Record, StepResult, TensorInfo, records_from
from hookscope.monitor.results import InfoKey, merge_entries
from hookscope.stats import Plan, fetch, reduce_tensor, summarize


def _entry(module: str, t: torch.Tensor) -> Entry:
    red = reduce_tensor(t, Plan())
    fetch([red])
    return Entry("forward", [(module, "output", True)], red, tuple(t.shape), t.dtype)


def test_tensor_infos_are_made_once_and_calls_merged() -> None:
    gen = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(4, 3, generator=gen) for _ in range(3))
    known: dict[InfoKey, TensorInfo] = {}
    merged, infos = merge_entries([_entry("fc", a), _entry("relu", b), _entry("fc", c)], known)
    assert infos == [
        TensorInfo("forward", "fc", "output", (4, 3), "float32"),
        TensorInfo("forward", "relu", "output", (4, 3), "float32"),
    ]
    both = summarize(merged[("forward", "fc", "output")])
    assert both["mean"] == pytest.approx(float(torch.cat([a, c]).mean()), rel=1e-6)
    assert both["max"] == float(torch.cat([a, c]).max())

    _, again = merge_entries([_entry("fc", a), _entry("relu", b)], known)
    assert [x is y for x, y in zip(again, infos, strict=True)] == [True, True]
    _, wider = merge_entries([_entry("fc", torch.randn(4, 5, generator=gen))], known)
    assert wider == [TensorInfo("forward", "fc", "output", (4, 5), "float32")]


def test_known_infos_are_dropped_when_they_pile_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "KNOWN_INFOS", 2)
    known: dict[InfoKey, TensorInfo] = {}
    for n in range(1, 6):  # a shape that changes every step
        _, infos = merge_entries([_entry("fc", torch.ones(n))], known)
        assert infos == [TensorInfo("forward", "fc", "output", (n,), "float32")]
        assert len(known) <= 3


def test_records_from_summaries_are_the_constructed_records() -> None:
    found = {
        ("forward", "conv", "output"): {"mean": 0.5, "std": 2.0, "nan_count": 0.0},
        ("param", "conv.weight", "grad"): {"norm": 3.0},
    }
    made = records_from(found)
    assert made == [
        Record("forward", "conv", "output", "mean", 0.5),
        Record("forward", "conv", "output", "std", 2.0),
        Record("forward", "conv", "output", "nan_count", 0.0),
        Record("param", "conv.weight", "grad", "norm", 3.0),
    ]
    assert hash(made[0]) == hash(Record("forward", "conv", "output", "mean", 0.5))
    assert repr(made[3]) == repr(Record("param", "conv.weight", "grad", "norm", 3.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].value = 1.0  # type: ignore[misc]


def test_step_result_made_from_summaries_is_the_constructed_result() -> None:
    found = {
        ("forward", "conv", "output"): {"mean": 0.5, "std": 2.0},
        ("param", "conv.weight", "grad"): {"norm": 3.0},
    }
    ratio = Record("param", "conv.weight", "param", "update_ratio", 0.1)
    built = StepResult(
        step=2,
        records=(*records_from(found), ratio),
        alerts=(),
        first_nonfinite=None,
        missing=("inputs",),
    )
    # made before its records are read: pickled, compared, copied in that state
    lazy = [StepResult.of(found, [ratio], step=2, alerts=(), first_nonfinite=None,
                          tensors=(), rank=0, world_size=1, ranks="local", missing=("inputs",))
            for _ in range(3)]  # fmt: skip
    assert pickle.loads(pickle.dumps(lazy[0])) == built
    assert lazy[1] == built and hash(lazy[1]) == hash(built) and repr(lazy[1]) == repr(built)
    assert dataclasses.replace(lazy[2], step=3).records == built.records
    assert lazy[2].records is lazy[2].records  # made once
    with pytest.raises(AttributeError):
        lazy[2].rows  # noqa: B018
    with pytest.raises(dataclasses.FrozenInstanceError):
        lazy[2].records = ()  # type: ignore[misc]
