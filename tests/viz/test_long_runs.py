"""The report of long and wide runs: downsampled envelopes, readable gradient flow, dropped flat panels."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope
from hookscope.monitor.records import StepResult
from hookscope.sinks.store import StoreSink
from hookscope.store import StoreWriter
from hookscope.viz import digest as digest_mod
from hookscope.viz import load_run, write_report
from tests.viz.chromium import find_chromium, load_page
from tests.viz.images import assert_not_blank, load_rgb

pytest.importorskip("matplotlib")

LAYERS = 110  # 220 parameters


def _wide_run(out: Path, steps: int = 3) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(6, 6) for _ in range(LAYERS)])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with hookscope.Monitor(model, sinks=[StoreSink(out / "monitor")]) as mon:
        for _ in range(steps):
            model(torch.randn(4, 6)).sum().backward()
            opt.step()
            opt.zero_grad()
            mon.step()


def _synthetic(folder: Path, steps: int) -> None:
    writer = StoreWriter(folder)
    for step in range(steps):
        spike = 100.0 if step == 777 else 1.0
        found = {
            ("forward", "a", "output"): {
                "mean": math.sin(step / 50),
                "absmax": spike,
                "zero_frac": 0.0,
            },
            ("param", "a.weight", "grad"): {"norm": 1.0 + step / steps},
        }
        writer.write(StepResult.of(found, step=step, alerts=(), first_nonfinite=None))
    writer.close()


def test_a_long_run_is_drawn_as_min_max_envelopes_that_keep_a_spike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_mod, "EXACT_ROWS", 100)
    _synthetic(tmp_path / "monitor", 5000)
    run = load_run(tmp_path)
    assert run.steps == 5000 and run.records == 5000 * 4
    assert run.width > 1 and 5000 / run.width <= digest_mod.MAX_BINS
    absmax = [row for row in run.rows if row["stat"] == "absmax"]
    assert len(absmax) <= digest_mod.MAX_BINS
    assert max(row["hi"] for row in absmax) == 100.0  # the one spiking step survives
    assert sum(row["hi"] == 100.0 for row in absmax) == 1
    norms = [row for row in run.rows if row["stat"] == "norm"]
    assert norms[-1]["hi"] == pytest.approx(1.0 + 4999 / 5000)
    assert [row["stat"] for row in run.last_rows] == ["mean", "absmax", "zero_frac", "norm"]
    result = write_report(tmp_path)
    page = result.path.read_text()
    assert f"each point is a bin of {run.width} steps" in page
    assert (
        "not drawn, the same for every layer at every step: zero_frac = 0" not in page
    )  # in the image
    assert result.notes == ()


def test_gradient_flow_of_220_parameters_lies_down_one_row_each(tmp_path: Path) -> None:
    _wide_run(tmp_path)
    run = load_run(tmp_path)
    assert len({row["module"] for row in run.rows if row["phase"] == "param"}) == 2 * LAYERS
    page = write_report(tmp_path).path
    assert page.stat().st_size < 10 * 2**20


needs_chromium = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium not installed (`make browser` installs it with apt-get); browser test skipped",
)


@needs_chromium
def test_gradient_flow_of_220_parameters_is_readable_in_chromium(tmp_path: Path) -> None:
    _wide_run(tmp_path)
    report = write_report(tmp_path).path
    result = load_page(
        report,
        evaluate={
            "flow": "(() => { const i = document.querySelector('#gradient-flow img');"
            " return [i.naturalWidth, i.naturalHeight]; })()",
        },
        width=1280,
        height=900,
    )
    assert result.errors == []
    width, height = result.values["flow"]
    # one horizontal bar and one horizontal label per parameter, 16 pixels each
    assert height >= 16 * 2 * LAYERS and width >= 800
    (tmp_path / "shot.png").write_bytes(result.screenshot)
    assert_not_blank(load_rgb(tmp_path / "shot.png"), min_colours=20)
