"""A Monitor opened after the model was compiled and run, used for inference: never silent.

The compiled graph was traced without the Monitor's hooks, so an inference
step records nothing; the step says so (``missing == ("forward",)``) and a
`StaleGraphWarning` names the compiled graph as the cause, also when the
Monitor watches the original module and the user calls the compiled wrapper.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import HookWarning
from hookscope.hooks.compiled import StaleGraphWarning


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def _x() -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("watch", ["original", "compiled"])
@pytest.mark.parametrize("backward", [False, True])
def test_monitor_opened_after_compiled_run_says_what_is_missing_and_why(
    watch: str, backward: bool
) -> None:
    model = _model()
    compiled = torch.compile(model)
    compiled(_x())  # traced without hooks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleGraphWarning)  # at open, where it is detected
        mon = hookscope.Monitor(model if watch == "original" else compiled).open()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = compiled(_x())
            if backward:
                out.sum().backward()
            result = mon.step()
    finally:
        mon.close()
    assert result is not None
    assert result.missing == (("forward", "backward") if backward else ("forward",))
    assert not [r for r in result.records if r.phase == "forward"]
    ours = [w for w in caught if issubclass(w.category, HookWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert issubclass(ours[0].category, StaleGraphWarning)
    text = str(ours[0].message)
    assert "compiled graphs traced without the Monitor's hooks" in text
    assert "module.forward(x)" not in text  # not the bypass cause
    if watch == "original":
        assert "called through a torch.compile wrapper" in text


def test_monitor_opened_before_the_first_compiled_call_records_inference() -> None:
    model = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", HookWarning)
        with hookscope.Monitor(model) as mon:
            compiled = torch.compile(model)
            compiled(_x())
            result = mon.step()
    assert result is not None and result.missing == ()
    assert {r.module for r in result.records if r.phase == "forward"} == {"0", "1", "2"}


def test_a_step_that_ran_nothing_is_not_reported() -> None:
    """An eager step without a forward (an update_ratio snapshot) misses nothing, compiled or not."""
    model = _model()
    torch.compile(_model())(_x())  # dynamo has compiled graphs, of another model
    with warnings.catch_warnings():
        warnings.simplefilter("error", HookWarning)
        with hookscope.Monitor(model) as mon:
            result = mon.step()
            model(_x())
            again = mon.step()
    assert result is not None and result.missing == ()
    assert again is not None and again.missing == ()
