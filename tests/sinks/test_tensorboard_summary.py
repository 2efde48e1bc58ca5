"""The light TensorBoard sink: a few events a step, the NaN at once, a full disk without a traceback."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import hookscope

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import (
    EventAccumulator,
)

from hookscope.sinks import TensorBoardSummarySink


def test_a_few_events_a_step_and_the_first_nan_as_text(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(12)])
    sink = TensorBoardSummarySink(tmp_path / "tb")
    with hookscope.Monitor(model, sinks=[sink]) as mon:
        for step in range(4):
            if step == 3:
                with torch.no_grad():
                    model[5].weight[0, 0] = math.nan
            model(torch.randn(2, 8)).sum().backward()
            mon.step()
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"tensors": 0, "scalars": 0})
    events.Reload()
    tags = events.Tags()
    assert set(tags["scalars"]) == {
        "hookscope/alerts",
        "hookscope/nonfinite",
        "hookscope/grad_norm",
        "hookscope/activation_absmax",
    }
    assert set(tags["histograms"]) == {
        "layers/forward_absmax",
        "layers/forward_std",
        "layers/param_grad_norm",
    }  # one histogram across the layers, not one scalar per record
    assert [e.step for e in events.Scalars("hookscope/grad_norm")] == [0, 1, 2, 3]
    assert [e.value for e in events.Scalars("hookscope/nonfinite")][:3] == [0.0, 0.0, 0.0]
    assert events.Scalars("hookscope/nonfinite")[3].value > 0
    assert "first_nonfinite/text_summary" in tags["tensors"]


FULL = textwrap.dedent(
    """
    import resource, signal, sys, warnings, torch
    from torch import nn
    import hookscope
    from hookscope.sinks import TensorBoardSummarySink
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(12)])
    sink = TensorBoardSummarySink(sys.argv[1], flush_seconds=1e-9)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4000, resource.RLIM_INFINITY))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hookscope.Monitor(model, sinks=[sink]) as mon:
            for _ in range(40):
                model(torch.randn(2, 8)).sum().backward()
                mon.step()
    print(len(caught), mon.step_index, caught[0].message if caught else "")
    """
)


def test_a_full_disk_is_one_warning_and_no_thread_traceback(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(FULL)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "tb")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    count, steps, message = done.stdout.split(" ", 2)
    assert (count, steps) == ("1", "40")
    assert "cannot write" in message and "training goes on" in message
