"""``Monitor(ranks="reduce")``: one SUM and one MAX all-reduce per step, whatever changes.

`workers.layouts` runs `workers.Branchy` on 2 gloo ranks for 6 steps; its
``extra`` layer runs on both ranks at step 2 (eval-only code) and on rank 1
alone at step 3 (rank-dependent code). The collectives each ``mon.step()``
starts are counted by wrapping the collectives of ``torch.distributed`` (each still runs).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.distributed import workers
from tests.distributed.harness import spawn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    out = tmp_path_factory.mktemp("layouts")
    spawn(workers.layouts, str(out))
    return [json.loads((out / f"layouts{rank}.json").read_text()) for rank in (0, 1)]


def test_two_collectives_per_step_once_the_ranks_agree_on_the_tensors(runs: list[Any]) -> None:
    for _maxima, collectives, _messages in runs:
        # first step: check the ranks hold the same tensors (MAX), then SUM + MAX;
        # then SUM + MAX only; step 2, a new layer: still SUM + MAX, whose header
        # tells every rank; step 3 first gathers the new keys (2 all-gathers)
        assert collectives == [3, 2, 2, 4, 2, 2]


def test_combined_steps_are_exact_also_with_rank_dependent_code(runs: list[Any]) -> None:
    for rank, (maxima, _collectives, messages) in enumerate(runs):
        for step, (own, recorded) in enumerate(maxima):
            other = runs[1 - rank][0][step][0]
            expected = {m: max(own[m], other.get(m, -math.inf)) for m in own}
            if step == 2:
                expected["extra"] = own["extra"]  # its first step: this rank's own value
            assert recorded == pytest.approx(expected)  # step 3: rank 1's extra, combined
        assert messages == [
            "hookscope Monitor: a tensor first seen after the first step (a layer that had "
            "not run before) keeps each rank's own statistics at that step; later steps "
            "combine it across ranks"
        ]


def test_hsdp_gradient_norms_count_each_shard_once(tmp_path: Path) -> None:
    # replicated over 2 ranks, sharded over 1: summing every rank's squares would give sqrt(2)x
    spawn(workers.hsdp, str(tmp_path))
    ranks = [torch.load(tmp_path / f"hsdp{rank}.pt", weights_only=False) for rank in (0, 1)]
    assert ranks[0]["norms"] == ranks[1]["norms"]
    for name, grad in ranks[0]["ref"].items():
        reduced = (grad.double() + ranks[1]["ref"][name].double()) / 2
        norm = torch.linalg.vector_norm(reduced).item()
        assert ranks[0]["norms"][name] == pytest.approx(norm, rel=1e-5), name
