"""`hookscope.dist` outside a process group, and the Monitor options it backs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope
from hookscope import dist, shards
from hookscope.errors import UsageError
from hookscope.sinks import JsonlSink, read_jsonl


def test_rank_and_files_come_from_torchrun_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (dist.rank(), dist.world_size()) == dist.where() == (0, 1)
    assert dist.rank_file("run/monitor.jsonl") == Path("run/monitor.jsonl")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")  # what torchrun sets before init_process_group
    assert (dist.rank(), dist.world_size()) == dist.where() == (3, 4)
    assert dist.rank_file("run/monitor.jsonl") == Path("run/monitor.rank3.jsonl")
    assert dist.rank_file("run/monitor.rank3.jsonl") == Path("run/monitor.rank3.jsonl")
    assert dist.rank_dir("run/tensorboard") == Path("run/tensorboard/rank3")


def test_jsonl_sink_writes_the_rank_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    model = nn.Linear(4, 4)
    sink = JsonlSink(tmp_path / "monitor.jsonl")
    with hookscope.Monitor(model, sinks=[sink]) as mon:
        model(torch.randn(2, 4))
        mon.step()
    assert sink.path == tmp_path / "monitor.rank1.jsonl"
    (row,) = read_jsonl(sink.path)
    assert (row["rank"], row["world_size"]) == (1, 2)


def test_plain_tensors_are_their_own_local_part() -> None:
    t = torch.randn(3)
    assert shards.local_tensor(t) is t
    p = nn.Parameter(t)
    assert shards.local_tensor(p) is p
    assert not shards.is_sharded(t)


@pytest.mark.parametrize(
    ("option", "value"), [("ranks", "all"), ("grads", "reduce"), ("grads", 1.0)]
)
def test_bad_ranks_and_grads_values_are_shown(option: str, value: object) -> None:
    with pytest.raises(UsageError, match=repr(value)):
        hookscope.Monitor(nn.Linear(2, 2), **{option: value})


def test_reduce_and_reduced_without_a_process_group_are_local() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(5, 4)
    with hookscope.Monitor(model, ranks="reduce", grads="reduced") as mon:
        model(x).square().mean().backward()
        mon.step()
    got = {(r.phase, r.module, r.stat): r.value for r in mon.results[0].records}
    assert got[("param", "0.weight", "norm")] == pytest.approx(
        torch.linalg.vector_norm(model[0].weight.grad).item(), rel=1e-6
    )
    assert got[("forward", "1", "max")] == pytest.approx(model[1](model[0](x)).max().item())


def test_wrapper_prefixes_are_stripped_unless_kept() -> None:
    inner = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    wrapped = nn.DataParallel(inner)  # on CPU: calls the module, names gain "module."
    for keep, names in ((False, {"0", "1", "0.weight"}), (True, {"module.0", "module.1"})):
        with hookscope.Monitor(wrapped, keep_wrappers=keep) as mon:
            wrapped(torch.randn(2, 4)).sum().backward()
            mon.step()
        assert names <= {r.module for r in mon.results[0].records}
