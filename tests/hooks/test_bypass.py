"""Runtime bypass detection: direct ``.forward()`` calls are caught, nothing else is."""

from __future__ import annotations

import copy
import io
import pickle
import sys
import warnings

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import hookscope
from hookscope.hooks.bypass import BypassDetector
from hookscope.hooks.probe import ORIG_ATTR
from tests.hooks.state import hook_state

HERE = __file__


def _here() -> int:
    """Line number of the caller's current line."""
    return sys._getframe(1).f_lineno


def _site(line: int) -> str:
    return f"{HERE}:{line}"


class Counting:
    """A forward hook that counts parameters of the module it fires on."""

    def __init__(self) -> None:
        self.calls = 0
        self.params = 0

    def __call__(self, module: nn.Module, args: object, output: object) -> None:
        self.calls += 1
        self.params = sum(p.numel() for p in module.parameters())


def test_classic_conv_forward_under_no_grad_is_reported_at_the_call_line() -> None:
    conv = nn.Conv2d(3, 3, 1)
    hook = Counting()
    conv.register_forward_hook(hook)
    x = torch.ones(3, 640, 640)
    with hookscope.session(conv, detect_bypass=True) as s, torch.no_grad():
        line = _here(); conv.forward(x)  # fmt: skip  # noqa: E702, HS101
        assert hook.calls == 0
        conv(x)
        assert hook.calls == 1
    # 3x3x1x1 weights + 3 biases = 12 parameters
    assert hook.params == 12
    [record] = s.bypasses
    assert record.module == ""
    assert record.module_type == "Conv2d"
    assert record.call_site == _site(line)
    assert record.count == 1
    assert record.hooks_skipped == ("forward:tests.hooks.test_bypass.Counting.__call__",)
    assert record.source.startswith("line = _here(); conv.forward(x)")
    assert "conv(x)" in record.fix


class Parent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.inner.forward(x))  # noqa: HS101 -- bypass on purpose


PARENT_LINE = Parent.forward.__code__.co_firstlineno + 1


def test_bypass_inside_a_parent_is_named_by_qualified_name_and_counted() -> None:
    model = Parent()
    with hookscope.session(model, detect_bypass=True) as s:
        for _ in range(3):
            model(torch.ones(1, 4))
    [record] = s.bypasses
    assert (record.module, record.module_type, record.count) == ("inner", "Linear", 3)
    assert record.call_site == _site(PARENT_LINE)
    assert record.fix == "return self.out(self.inner(x))"


class Doubled(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x) * 2


class Recursive(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, depth: int = 2) -> torch.Tensor:
        x = self.lin(x)
        return self(x, depth - 1) if depth > 0 else x


class Everything(nn.Module):
    """super().forward, shared modules, recursion, containers, calls from hooks, checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.doubled = Doubled(4, 4)
        self.shared = nn.Linear(4, 4)
        self.alias = self.shared
        self.rec = Recursive()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.mlist = nn.ModuleList([nn.Linear(4, 4), nn.Tanh()])
        self.mdict = nn.ModuleDict({"a": nn.Linear(4, 4)})
        self.side = nn.Linear(4, 4)
        self.ckpt = nn.Sequential(nn.Linear(4, 4), nn.GELU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.alias(self.shared(self.doubled(x)))
        x = self.rec(x)
        x = self.seq(x)
        for layer in self.mlist:
            x = layer(x)
        x = self.mdict["a"](x)
        return checkpoint(self.ckpt, x, use_reentrant=False)


def test_no_false_positives_across_the_usual_patterns() -> None:
    model = Everything()
    side_calls = []

    def call_side(module: nn.Module, args: tuple[torch.Tensor], output: torch.Tensor) -> None:
        side_calls.append(model.side(output))  # a module called from inside a hook

    model.seq.register_forward_hook(call_side)
    x = torch.randn(2, 4, requires_grad=True)
    with hookscope.session(model, detect_bypass=True, bypass="raise") as s:
        model(x).sum().backward()  # backward recomputes the checkpointed block
    assert s.bypasses == []
    assert len(side_calls) == 1


def test_checkpointing_a_bound_forward_is_a_bypass_reported_in_user_code() -> None:
    model = nn.Sequential(nn.Linear(4, 4))
    x = torch.randn(2, 4, requires_grad=True)
    with hookscope.session(model, detect_bypass=True) as s:
        line = _here(); y = checkpoint(model[0].forward, x, use_reentrant=False)  # fmt: skip  # noqa: E702
        y.sum().backward()
    # Not torch/utils/checkpoint.py but the user's line. The recomputation that
    # the backward triggers re-runs the same forward on purpose (transformers
    # checkpoints ``forward`` this way after ``__call__`` ran the hooks): not reported.
    assert [(r.module, r.call_site, r.count) for r in s.bypasses] == [("0", _site(line), 1)]


def test_warn_policy_warns_once_per_call_site_at_that_line() -> None:
    model = Parent()
    with (
        hookscope.session(model, detect_bypass=True, bypass="warn") as s,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        model(torch.ones(1, 4))
        model(torch.ones(1, 4))
    assert [w.category for w in caught] == [hookscope.BypassWarning]
    assert (caught[0].filename, caught[0].lineno) == (HERE, PARENT_LINE)
    assert "inner (Linear).forward was invoked directly" in str(caught[0].message)
    assert s.bypasses[0].count == 2


def test_raise_policy_raises_before_the_forward_runs() -> None:
    model = Parent()
    ran = []
    model.inner.register_forward_pre_hook(lambda m, a: ran.append(1))
    with (
        hookscope.session(model, detect_bypass=True, bypass="raise"),
        pytest.raises(hookscope.BypassError, match=r"inner \(Linear\)\.forward.*forward_pre"),
    ):
        model(torch.ones(1, 4))
    assert ran == []


def test_session_leaves_no_trace_on_modules_or_classes_also_after_an_exception() -> None:
    model = Parent()
    model.out.register_forward_hook(Counting())
    before = hook_state(model)
    linear_forward = nn.Linear.__dict__["forward"]
    parent_forward = Parent.__dict__["forward"]
    with (
        pytest.raises(RuntimeError, match="mat1 and mat2"),
        hookscope.session(model, detect_bypass=True) as s,
    ):
        assert nn.Linear.__dict__["forward"] is not linear_forward  # probed while active
        model(torch.ones(1, 5))
    assert not s.active
    assert hook_state(model) == before
    assert nn.Linear.__dict__["forward"] is linear_forward
    assert Parent.__dict__["forward"] is parent_forward
    assert "__init_subclass__" not in nn.Module.__dict__


def test_nested_detectors_restore_the_class_only_when_the_last_one_detaches() -> None:
    a, b = Parent(), Parent()
    linear_forward = nn.Linear.__dict__["forward"]
    with hookscope.session(a, detect_bypass=True) as sa:
        with hookscope.session(b, detect_bypass=True) as sb:
            b(torch.ones(1, 4))
        assert getattr(nn.Linear.__dict__["forward"], ORIG_ATTR) is linear_forward
        a(torch.ones(1, 4))
        b(torch.ones(1, 4))  # b is no longer watched
    assert nn.Linear.__dict__["forward"] is linear_forward
    assert [r.count for r in sa.bypasses] == [1]
    assert [r.count for r in sb.bypasses] == [1]


def inner(x: torch.Tensor) -> torch.Tensor:
    """Same name as a cell in the probe's closure: scripting must still find this one."""
    return x * 2


class UsesGlobal(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return inner(self.fc(x))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_deepcopy_pickle_and_torchscript_work_while_watching() -> None:
    model = Parent()
    x = torch.ones(1, 4)
    with hookscope.session(model, detect_bypass=True) as s:
        clone = copy.deepcopy(model)
        restored = pickle.loads(pickle.dumps(model))
        buffer = io.BytesIO()
        torch.save(model.state_dict(), buffer)
        scripted = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
        assert scripted(x).shape == (1, 4)
        mine = UsesGlobal()
        with hookscope.session(mine, detect_bypass=True):  # UsesGlobal.forward is probed
            assert torch.equal(torch.jit.script(mine)(x), mine(x))
        assert torch.equal(clone(x), model(x))
        assert torch.equal(restored(x), model(x))
    assert "forward" not in clone.inner.__dict__
    # model(x) ran twice; the copies (same classes, other objects) are not watched.
    assert [r.count for r in s.bypasses] == [2]


def test_bypass_modules_selects_what_is_watched() -> None:
    model = Parent()
    with hookscope.session(model, detect_bypass=True, bypass_modules="out") as s:
        model(torch.ones(1, 4))
    assert s.bypasses == []


def test_attach_all_watches_classes_defined_later_and_names_by_attribute() -> None:
    detector = BypassDetector(nn.Identity(), track=False)
    detector.attach_all()
    try:

        class Late(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.head = nn.Linear(2, 2)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.head.forward(x)  # noqa: HS101

        late = Late()
        late(torch.ones(1, 2))
        late.forward(torch.ones(1, 2))  # noqa: HS101
    finally:
        detector.detach()
    assert "__init_subclass__" not in nn.Module.__dict__
    assert "forward" in Late.__dict__ and not hasattr(Late.__dict__["forward"], ORIG_ATTR)
    records = {(r.module, r.module_type): r.count for r in detector.records}
    assert records == {("head", "Linear"): 2, ("Late", "Late"): 1}


def test_bad_policy_is_a_usage_error_showing_the_value() -> None:
    with pytest.raises(hookscope.UsageError, match="'loud'"):
        BypassDetector(nn.Linear(2, 2), policy="loud")  # type: ignore[arg-type]


def test_compiled_model_runs_cleanly_while_another_model_is_watched() -> None:
    eager = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    compiled = torch.compile(eager, backend="eager")
    watched = Parent()  # also uses nn.Linear, so nn.Linear.forward is probed
    x = torch.randn(2, 4)
    with hookscope.session(watched, detect_bypass=True) as s:
        assert torch.equal(compiled(x), eager(x))  # no dynamo warning (warnings are errors)
        watched(torch.ones(1, 4))
    assert [(r.module, r.count) for r in s.bypasses] == [("inner", 1)]
