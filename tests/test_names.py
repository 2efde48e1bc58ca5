"""Wrapper prefixes are stripped from names, on real wrapped models."""

from __future__ import annotations

from functools import partial

import pytest
import torch
from torch import nn

import hookscope
from hookscope.names import clean_names, clean_param_name, is_wrapper, strip_wrappers


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.module = nn.Linear(4, 4)  # a user's own child called "module" keeps its name
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.module(x))


def test_strip_wrappers_on_strings() -> None:
    assert strip_wrappers("_orig_mod.layer.0._fsdp_wrapped_module.fc") == "layer.0.fc"
    assert strip_wrappers("module.fc") == "fc"
    assert strip_wrappers("module.fc", leading_module=False) == "module.fc"
    assert strip_wrappers("") == ""


def test_clean_names_of_compiled_and_data_parallel() -> None:
    net = Net()
    compiled = torch.compile(net)
    names = clean_names(compiled)
    assert names["_orig_mod.module"] == "module"
    assert names["_orig_mod.fc"] == "fc"
    assert names[""] == names["_orig_mod"] == ""
    assert is_wrapper(compiled)
    assert not is_wrapper(net)

    wrapped = nn.DataParallel(net)
    names = clean_names(wrapped)
    assert names["module.module"] == "module"
    assert names["module.fc"] == "fc"
    assert clean_param_name("module.fc.weight", names) == "fc.weight"
    assert clean_names(wrapped, keep_wrappers=True)["module.fc"] == "module.fc"
    # no wrapper: a child called "module" is the user's own
    assert clean_names(net)["module"] == "module"


class Hooked(nn.Module):
    """Net, with a direct ``.forward`` call on ``fc`` and a hook on ``module``."""

    def __init__(self) -> None:
        super().__init__()
        self.module = nn.Linear(4, 4)
        self.fc = nn.Linear(4, 2)
        self.unused = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc.forward(torch.relu(self.module(x)))


def _wrap(prefix: str) -> nn.Module:
    if prefix == "module":
        return nn.DataParallel(Hooked())  # on CPU it calls the module: names gain "module."
    torch._dynamo.reset()  # graphs traced for another Hooked, without hooks, are dropped
    return torch.compile(Hooked(), backend="eager")  # names gain "_orig_mod."


# dynamo, tracing the capture hook, trips PyTorch's own warning on reading .grad of a non-leaf
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_capture_keys_match_the_unwrapped_model_unless_kept() -> None:
    x = torch.randn(3, 4)
    for prefix in ("module", "_orig_mod"):
        wrapped = _wrap(prefix)
        with hookscope.capture(wrapped, keep=True) as cache:
            out = wrapped(x)
        assert sorted(cache) == ["", "module"]  # fc ran through .forward: no hook
        assert cache.calls[""] == 1  # the wrapper's output is not stored again
        torch.testing.assert_close(cache[""], out)
        wrapped = _wrap(prefix)  # a compiled model traced without hooks would skip them
        with hookscope.capture(wrapped, keep=True, keep_wrappers=True) as kept:
            wrapped(x)
        assert sorted(kept) == ["", prefix, f"{prefix}.module"]


def test_doctor_names_match_the_unwrapped_model_unless_kept() -> None:
    x = torch.randn(3, 4)
    wrapped = nn.DataParallel(Hooked())
    handle = wrapped.module.unused.register_forward_hook(lambda *_: None)
    report = hookscope.doctor(wrapped, x, backward=True)
    (hook,) = report.hooks
    assert (hook.module, hook.names, hook.fired) == ("unused", ("unused",), 0)
    assert (
        hook.reason == "'unused' never executed in this run (unused module, or a branch not taken)"
    )
    (bypass,) = report.bypasses
    assert (bypass.module, bypass.names) == ("fc", ("fc",))
    kept = hookscope.doctor(wrapped, x, keep_wrappers=True)
    assert kept.hooks[0].module == "module.unused" and kept.bypasses[0].module == "module.fc"
    handle.remove()


def test_summary_rows_match_the_unwrapped_model_unless_kept() -> None:
    x = torch.randn(3, 4)
    plain = hookscope.summary(Hooked(), x)
    for prefix in ("module", "_orig_mod"):
        got = hookscope.summary(_wrap(prefix), x)
        assert [(r.index, r.name, r.depth) for r in got.rows] == [
            (r.index, r.name, r.depth) for r in plain.rows
        ]
        assert got.not_run == plain.not_run == ("unused",)
        assert got.total_params == plain.total_params
    kept = hookscope.summary(nn.DataParallel(Hooked()), x, keep_wrappers=True)
    assert [(r.name, r.depth) for r in kept.rows][:3] == [
        ("", 0),
        ("module", 1),
        ("module.module", 2),
    ]


def test_session_hooks_get_the_unwrapped_names_unless_kept() -> None:
    x = torch.randn(3, 4)
    for prefix in ("module", "_orig_mod"):
        for keep in (False, True):
            wrapped = _wrap(prefix)  # a fresh compile: traced with this session's hooks
            seen: list[str] = []
            with hookscope.session(wrapped, keep_wrappers=keep) as hooks:
                hooks.add_forward_hook(partial(_note, seen), "*module", leaves_only=True)
                hooks.add_grad_hook(partial(_note, seen), "*fc.bias")
                wrapped(x).sum().backward()
            # the selectors match either way; the names handed over follow keep_wrappers
            mark = f"{prefix}." if keep else ""
            assert seen == [f"{mark}module", f"{mark}fc.bias"], (prefix, keep)


def _note(seen: list[str], name: str, *_args: object) -> None:
    seen.append(name)
