"""DDP, FSDP1 (flat and original parameters) and FSDP2 on real 2-process gloo groups.

Every variant trains 5 steps of a small transformer under
``Monitor(ranks="reduce", grads="reduced")``; step 0's statistics must match
a single-process reference computed on the gathered tensors: each leaf's
output concatenated over the ranks, each parameter gradient averaged over
the ranks (what DDP's all-reduce and FSDP's reduce-scatter produce).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from hookscope.sinks import read_jsonl
from tests.distributed import workers
from tests.distributed.harness import spawn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    spawn(workers.train, str(out))
    return out


def _load(out: Path, rank: int) -> dict[str, Any]:
    loaded: dict[str, Any] = torch.load(out / f"rank{rank}.pt", weights_only=False)
    return loaded


def _expected_forward(outputs: list[torch.Tensor]) -> dict[str, float]:
    t = torch.cat([o.reshape(-1) for o in outputs]).double()
    return {
        "mean": t.mean().item(),
        "std": t.std(correction=0).item(),
        "min": t.min().item(),
        "max": t.max().item(),
        "absmax": t.abs().max().item(),
        "rms": t.square().mean().sqrt().item(),
    }


@pytest.mark.parametrize("variant", workers.VARIANTS)
def test_statistics_match_the_gathered_tensors(trained: Path, variant: str) -> None:
    ranks = [_load(trained, rank)[variant] for rank in (0, 1)]
    assert ranks[0]["errors"] == 0 and ranks[1]["errors"] == 0
    assert ranks[0]["records"] == ranks[1]["records"]  # "reduce": the same on every rank
    got = {(p, m, t, s): v for p, m, t, s, v in ranks[0]["records"]}
    refs = [r["ref"] for r in ranks]
    checked = 0
    for name in refs[0]["outputs"]:
        expected = _expected_forward([ref["outputs"][name] for ref in refs])
        for stat, value in expected.items():
            assert got[("forward", name, "output", stat)] == pytest.approx(
                value, rel=1e-5, abs=1e-7
            )
            checked += 1
    for name in refs[0]["grads"]:
        reduced = (refs[0]["grads"][name].double() + refs[1]["grads"][name].double()) / 2
        norm = torch.linalg.vector_norm(reduced).item()
        assert got[("param", name, "grad", "norm")] == pytest.approx(norm, rel=1e-5), name
        rms = norm / math.sqrt(reduced.numel())
        assert got[("param", name, "grad", "rms")] == pytest.approx(rms, rel=1e-5), name
        checked += 1
    assert checked >= 6 * 6 + 10  # every leaf, every parameter


@pytest.mark.parametrize("variant", workers.VARIANTS)
def test_each_rank_writes_its_own_valid_file(trained: Path, variant: str) -> None:
    assert [_load(trained, rank)[variant]["frame_ranks"] for rank in (0, 1)] == [[0], [1]]
    files = sorted(p.name for p in (trained / variant).iterdir() if p.is_file())
    assert files == ["monitor.rank0.jsonl", "monitor.rank1.jsonl"]
    for rank in (0, 1):
        path = trained / variant / f"monitor.rank{rank}.jsonl"
        lines = path.read_text().splitlines()
        assert len(lines) == workers.STEPS
        rows = read_jsonl(path)  # every line strict JSON
        assert [row["rank"] for row in rows] == [rank] * workers.STEPS
        assert {row["world_size"] for row in rows} == {2}
        assert {row["ranks"] for row in rows} == {"reduce"}


@pytest.mark.parametrize("variant", workers.VARIANTS)
def test_parameter_counts_are_whole_model_counts(trained: Path, variant: str) -> None:
    whole = sum(p.numel() for p in workers.Tiny().parameters())
    assert [_load(trained, rank)[variant]["params"] for rank in (0, 1)] == [whole, whole]


def test_a_nan_on_rank_1_is_found_on_rank_1(trained: Path) -> None:
    tmp_path = trained
    for rank in (0, 1):
        firsts = json.loads((tmp_path / f"rank{rank}.json").read_text())
        # "reduce": every rank names rank 1's forward, not rank 0's all-reduced NaN gradient
        assert firsts["reduce"] == [2, "forward", "head", "output", 1]
    local = [json.loads((tmp_path / f"rank{r}.json").read_text())["local"] for r in (0, 1)]
    assert local[1][1:] == ["forward", "head", "output", 1]
    # "local": rank 0 only sees the NaN that DDP's all-reduce brought into its gradients
    assert local[0][1] == "param" and local[0][3:] == ["grad", 0]


def test_a_step_only_one_rank_takes_fails_instead_of_hanging(tmp_path: Path) -> None:
    spawn(workers.skipped_step, str(tmp_path))
    for rank in (0, 1):
        message = (tmp_path / f"numbers{rank}.txt").read_text()
        assert message.startswith(f"rank {rank}: Monitor.step() out of step: the ranks are ")
        assert "at steps 5 to 6. It is a collective" in message
    message = (tmp_path / "rank0.txt").read_text()
    assert "rank 0: Monitor.step() waited 3 s" in message
    assert "rank(s) 1 never reached call #" in message
    assert "every rank must call it" in message
    assert (tmp_path / "rank1.txt").read_text() == "done"


def test_a_doctor_or_summary_only_one_rank_runs_fails_fast_and_the_group_survives(
    tmp_path: Path,
) -> None:
    spawn(workers.lonely_doctor, str(tmp_path))
    message, seconds = json.loads((tmp_path / "rank0.json").read_text())
    assert message.startswith("rank 0: hookscope.doctor(backward=True) is a collective here")
    assert "DistributedDataParallel all-reduces gradients in the backward" in message
    assert "rank(s) 1 did not call it within 3 s" in message
    assert seconds < 30
    executed = [int((tmp_path / f"after{r}.txt").read_text()) for r in (0, 1)]
    assert executed[0] == executed[1] > 10  # then called on both ranks: it runs
    message = (tmp_path / "summary0.txt").read_text()
    assert message.startswith("rank 0: hookscope.summary() is a collective here (FSDPTiny ")
    assert "rank(s) 1 did not call it within 3 s" in message


def test_callbacks_do_not_wait_for_a_reduce_step_and_keep_the_last(trained: Path) -> None:
    for rank in (0, 1):
        logged, norms = json.loads((trained / f"callbacks{rank}.json").read_text())
        # step 0 is held (reading it would wait for its all-reduces); each step
        # hands on the one before; flush (the callbacks' train end / log) the last
        assert len(norms) == 3 and all(isinstance(n, float) for n in norms)
        assert logged == [None, *norms]
        lines = (
            (trained / f"callbacks{rank}" / f"monitor.rank{rank}.jsonl").read_text().splitlines()
        )
        assert sorted({json.loads(line)["step"] for line in lines}) == [0, 1, 2]


def test_a_nan_between_recorded_steps_is_found_on_each_rank_at_its_step(tmp_path: Path) -> None:
    spawn(workers.sentinel, str(tmp_path))
    found = [json.loads((tmp_path / f"sentinel{rank}.json").read_text()) for rank in (0, 1)]
    for ranks in ("reduce", "local"):
        # each rank's own first NaN/Inf (no collective on unrecorded steps): rank 1 made it,
        # rank 0 got it through DDP's all-reduced gradients, both at step 4
        assert found[1][ranks][0] == [4, "forward", "head", "output", 1]
        assert found[0][ranks][0][:2] == [4, "param"] and found[0][ranks][0][3:] == ["grad", 0]
        # recorded steps 0, 3, 6 (their collectives still line up); the NaN weight stays,
        # so the sentinel reports unrecorded steps 4 and 5
        for rank in (0, 1):
            expected = [[0, False], [3, False], [4, True], [5, True], [6, False]]
            assert found[rank][ranks][1] == expected
