"""HookscopeCallback in a real transformers Trainer: tiny GPT-2 from a config, CPU, a few steps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from hookscope.integrations.transformers import HookscopeCallback  # noqa: E402
from hookscope.sinks.jsonl import read_jsonl  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning:accelerate.*")

STEPS = 4


def _gpt2() -> Any:
    config = transformers.GPT2Config(
        vocab_size=64, n_positions=16, n_embd=16, n_layer=2, n_head=2,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def _data(n: int) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 64, (n, 8), generator=g)
    return [{"input_ids": row, "labels": row} for row in ids]


class LogsSeen(transformers.TrainerCallback):
    """Stands in for a ``report_to`` integration: created before the user's callbacks."""

    def __init__(self) -> None:
        self.logs: list[dict[str, float]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        self.logs.append(dict(logs))


class Poison(transformers.TrainerCallback):
    """Puts a NaN into one weight before optimizer step ``at`` (the Trainer's numbering)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def on_step_begin(self, args: Any, state: Any, control: Any, model: Any, **kw: Any) -> None:
        if state.global_step + 1 == self.at:
            with torch.no_grad():
                model.transformer.h[1].mlp.c_fc.weight[0, 0] = math.nan


def _train(tmp_path: Path, accumulation: int, *callbacks: Any, logging_steps: int = 1) -> Any:
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=STEPS,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=accumulation,
        logging_steps=logging_steps,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    trainer = transformers.Trainer(
        model=_gpt2(), args=args, train_dataset=_data(32), callbacks=list(callbacks)
    )
    trainer.train()
    return trainer


@pytest.mark.parametrize("accumulation", [1, 2])
def test_one_step_per_optimizer_step_with_the_trainers_grad_norm(
    tmp_path: Path, accumulation: int
) -> None:
    seen = LogsSeen()
    callback = HookscopeCallback(explode_above=1e-3)  # every gradient norm is an alert
    trainer = _train(tmp_path, accumulation, seen, callback)
    assert callback.monitor is not None

    lines = read_jsonl(tmp_path / "out" / "hookscope" / "monitor.jsonl")
    assert [line["step"] for line in lines] == list(range(1, STEPS + 1))
    assert [r.step for r in callback.monitor.results] == list(range(1, STEPS + 1))

    history = [h for h in trainer.state.log_history if "grad_norm" in h]
    assert [h["step"] for h in history] == list(range(1, STEPS + 1))
    for h in history:
        assert h["hookscope/grad_norm"] == pytest.approx(h["grad_norm"], rel=1e-5)
    # An alert fires when a value first crosses the threshold: all of them at step 1.
    alerts = [a for a in callback.monitor.alerts if a.rule == "exploding"]
    assert alerts and {a.step for a in alerts} <= {h["step"] for h in history}
    assert history[0]["hookscope/alerts"] == len([a for a in alerts if a.step == 1])
    a = alerts[0]
    assert history[0][f"hookscope/alert/exploding/{a.phase}/{a.module}/{a.tensor}"] == a.value
    # The report_to stand-in, created before HookscopeCallback, saw the same values.
    reported = [logs for logs in seen.logs if "grad_norm" in logs]
    assert [logs["hookscope/grad_norm"] for logs in reported] == [
        h["hookscope/grad_norm"] for h in history
    ]

    doctor = json.loads((tmp_path / "out" / "hookscope" / "doctor.json").read_text())
    assert doctor["bypasses"] == []
    assert callback.doctor_report is not None and callback.doctor_report.model == "GPT2LMHeadModel"


def test_planted_nan_is_named_with_the_trainers_step(tmp_path: Path) -> None:
    callback = HookscopeCallback(doctor=False)
    trainer = _train(tmp_path, 1, Poison(at=3), callback)
    assert callback.monitor is not None
    first = callback.monitor.first_nonfinite
    assert first is not None
    assert (first.step, first.phase, first.module) == (3, "forward", "transformer.h.1.mlp.c_fc")
    [at_three] = [h for h in trainer.state.log_history if h.get("step") == 3 and "loss" in h]
    assert at_three["hookscope/first_nonfinite_step"] == 3
    assert any(key.startswith("hookscope/alert/nonfinite/") for key in at_three)
    assert not (tmp_path / "out" / "hookscope" / "doctor.json").exists()


def test_default_cadence_is_the_trainers_and_a_nan_between_logs_is_exact(
    tmp_path: Path,
) -> None:
    callback = HookscopeCallback(doctor=False)
    trainer = _train(tmp_path, 1, Poison(at=2), callback, logging_steps=3)
    assert callback.monitor is not None and callback.monitor.every == 3
    # the first step and step 3 recorded; steps 2 and 4 checked only, kept and written
    # because they held NaNs (the weight stays NaN once the optimizer used it)
    results = [(r.step, r.sentinel) for r in callback.monitor.results]
    assert results == [(1, False), (2, True), (3, False), (4, True)]
    lines = read_jsonl(tmp_path / "out" / "hookscope" / "monitor.jsonl")
    assert [line["step"] for line in lines] == [1, 2, 3, 4]
    first = callback.monitor.first_nonfinite
    assert first is not None
    assert (first.step, first.phase, first.module) == (2, "forward", "transformer.h.1.mlp.c_fc")
    [at_two] = [h for h in trainer.state.log_history if h.get("step") == 2]
    assert at_two["hookscope/first_nonfinite_step"] == 2


def test_explicit_every_wins_over_the_trainers_cadence(tmp_path: Path) -> None:
    callback = HookscopeCallback(doctor=False, every=3)
    _train(tmp_path, 1, callback, logging_steps=2)
    assert callback.monitor is not None and callback.monitor.every == 3
    assert [r.step for r in callback.monitor.results] == [1, 3]


def test_bad_options_fail_before_training() -> None:
    with pytest.raises(ValueError, match="'grads/norm'"):
        HookscopeCallback(log_stats=["grads/norm"])
    with pytest.raises(ValueError, match="'sometimes'"):
        HookscopeCallback(every="sometimes")
