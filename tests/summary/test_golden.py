"""Golden outputs for every format. Regenerate on purpose only:

HOOKSCOPE_REGEN_GOLDEN=1 .venv/bin/pytest tests/summary/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import hookscope
from hookscope.summary import ModelSummary
from hookscope.zoo import SmallCNN, resnet50_like
from tests.summary.test_params import SharedTwice, TiedLM

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("HOOKSCOPE_REGEN_GOLDEN") == "1"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with HOOKSCOPE_REGEN_GOLDEN=1"
    assert text + "\n" == path.read_text(encoding="utf-8")


def _small_cnn() -> ModelSummary:
    return hookscope.summary(SmallCNN(), input_size=(1, 3, 32, 32))


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("table", "txt"), ("json", "json"), ("csv", "csv"), ("markdown", "md")]
)
def test_small_cnn_every_format(fmt: str, suffix: str) -> None:
    _check(f"small_cnn.{suffix}", _small_cnn().render(fmt))  # type: ignore[arg-type]


def test_str_is_the_table() -> None:
    s = _small_cnn()
    assert str(s) == s.to_table() == s.render("table")


def test_resnet50_depth_1_on_meta() -> None:
    with torch.device("meta"):
        model = resnet50_like()
    _check(
        "resnet50_depth1.txt", str(hookscope.summary(model, input_size=(1, 3, 224, 224), depth=1))
    )


def test_tied_and_shared_tables() -> None:
    tied = hookscope.summary(TiedLM(), input_size=(2, 5), dtypes=torch.long)
    _check("tied_lm.md", tied.to_markdown())
    _check("shared_twice.txt", str(hookscope.summary(SharedTwice(), input_size=(3, 6))))
