"""`hookscope.doctor` on real models: every reason a hook does not fire, with module and line."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.nn.utils import prune

import hookscope
from hookscope.doctor import DoctorReport, HookRecord
from hookscope.errors import ForwardError
from hookscope.zoo import SmallCNN
from tests.doctor import models
from tests.hooks.state import hook_state, state_dict_copy

MODELS_FILE = models.__file__


def _line_of(func: object, text: str) -> int:
    """Line number of the first line of ``func`` containing ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(func)  # type: ignore[arg-type]
    return start + next(i for i, line in enumerate(lines) if text in line)


def _only(report: DoctorReport, module: str, kind: str) -> HookRecord:
    [record] = [h for h in report.hooks if h.module == module and h.kind == kind]
    return record


def count_params(module: nn.Module, args: object, output: object) -> None:
    module.counted = sum(p.numel() for p in module.parameters())  # type: ignore[assignment]


def test_classic_conv_forward_under_no_grad_reported_with_line_and_fix() -> None:
    model = models.NoGradConv()
    model.conv.register_forward_hook(count_params)
    report = hookscope.doctor(model, torch.ones(3, 640, 640))
    line = _line_of(models.NoGradConv.forward, "self.conv.forward(x)")
    record = _only(report, "conv", "forward")
    assert record.fired == 0
    assert record.code == "forward_called_directly"
    assert record.call_sites == (f"{MODELS_FILE}:{line}",)
    assert record.fix == "return self.conv(x)"
    assert record.hook == "tests.doctor.test_doctor.count_params"
    [bypass] = report.bypasses
    assert (bypass.module, bypass.module_type, bypass.count) == ("conv", "Conv2d", 1)
    assert bypass.hooks_skipped == ("forward:tests.doctor.test_doctor.count_params",)
    assert not report.ok
    # The same conv called properly: the hook fires and the report is clean.
    conv = nn.Conv2d(3, 3, 1)
    conv.register_forward_hook(count_params)
    with torch.no_grad():
        clean = hookscope.doctor(conv, torch.ones(3, 640, 640))
    assert clean.ok and _only(clean, "", "forward").fired == 1
    assert conv.counted == 12  # type: ignore[comparison-overlap]  # 3*3*1*1 weights + 3 biases


def test_pruned_layer_called_through_forward_names_the_pruning_pre_hook() -> None:
    model = models.PrunedParent()
    prune.l1_unstructured(model.fc, "weight", amount=0.5)
    report = hookscope.doctor(model, torch.randn(2, 4))
    record = _only(report, "fc", "forward_pre")
    assert record.hook == "torch.nn.utils.prune.L1Unstructured.__call__"
    assert record.code == "forward_called_directly"
    line = _line_of(models.PrunedParent.forward, "self.fc.forward(x)")
    assert record.call_sites == (f"{MODELS_FILE}:{line}",)
    assert report.bypasses[0].hooks_skipped == (
        "forward_pre:torch.nn.utils.prune.L1Unstructured.__call__",
    )
    prune.remove(model.fc, "weight")  # pruning still finds its own hook object afterwards
    assert not model.fc._forward_pre_hooks


class Twice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) + self.fc.forward(x)  # noqa: HS101 -- on purpose


def test_module_called_both_ways_is_reported_as_partly_skipped() -> None:
    model = Twice()
    model.fc.register_forward_hook(count_params)
    record = _only(hookscope.doctor(model, torch.randn(2, 4)), "fc", "forward")
    assert (record.fired, record.code) == (1, "forward_called_directly")
    assert "1 of 2 run(s)" in (record.reason or "")


def test_global_module_hooks_are_counted_and_listed_as_skipped() -> None:
    from torch.nn.modules.module import register_module_forward_hook

    def everywhere(module: nn.Module, args: object, output: object) -> None:
        pass

    handle = register_module_forward_hook(everywhere)
    try:
        report = hookscope.doctor(models.PrunedParent(), torch.randn(2, 4))
    finally:
        handle.remove()
    record = _only(report, "*", "global_forward")
    assert record.fired == 1  # the root ran through __call__; fc did not
    assert report.bypasses[0].hooks_skipped == (
        "global_forward:tests.doctor.test_doctor.test_global_module_hooks_are_counted_and_listed_as_skipped.<locals>.everywhere",
    )


def test_module_never_executed() -> None:
    model = models.Branchy()
    for name in ("main", "rare", "aux"):
        model.get_submodule(name).register_forward_hook(count_params)
    report = hookscope.doctor(model, torch.randn(2, 4))
    assert _only(report, "main", "forward").code is None
    assert _only(report, "rare", "forward").code == "not_executed"
    assert _only(report, "aux", "forward").code == "not_executed"
    assert report.bypasses == ()
    # Taking the branch makes rare's hook fire.
    model.use_rare = True
    assert _only(hookscope.doctor(model, torch.randn(2, 4)), "rare", "forward").fired == 1


def test_hook_on_a_replaced_module_is_reported_by_the_session_that_added_it() -> None:
    model = models.WithScripted()
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda name, m, a, o: None, "head")
        model.head = nn.Linear(4, 2)
        report = hookscope.doctor(model, torch.randn(2, 4))
    record = _only(report, "head", "forward")
    assert (record.code, record.fired, record.by_hookscope) == ("module_replaced", 0, True)
    assert "no longer part of the model" in (record.reason or "")


@pytest.mark.filterwarnings("ignore:`torch.jit.trace.*is deprecated:DeprecationWarning")
def test_hook_on_a_module_replaced_by_its_torchscript_version() -> None:
    model = models.WithScripted()
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda name, m, a, o: None, "body.0")
        model.body = torch.jit.trace(model.body, torch.randn(2, 4))
        report = hookscope.doctor(model, torch.randn(2, 4))
    record = _only(report, "body.0", "forward")
    assert (record.code, record.fired) == ("torchscript", 0)
    assert "'body' is scripted or traced" in (record.reason or "")


def test_hook_added_after_torch_compile_is_reported_as_compiled() -> None:
    eager = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    compiled = torch.compile(eager, backend="eager")
    compiled(torch.randn(2, 4))
    eager[0].register_forward_hook(count_params)
    report = hookscope.doctor(compiled, torch.randn(2, 4))
    record = _only(report, "0", "forward")  # names as in the unwrapped model
    assert (record.code, record.fired) == ("compiled", 0)
    assert "torch.compile" in (record.reason or "")


def _grad_model() -> models.GradTraps:
    model = models.GradTraps()
    for name in ("frozen", "nograd", "side", "head"):
        model.get_submodule(name).register_full_backward_hook(lambda m, gi, go: None)
    return model


def test_backward_hooks_without_a_backward_pass() -> None:
    report = hookscope.doctor(_grad_model(), torch.randn(2, 4))
    codes = {h.module: h.code for h in report.hooks}
    assert codes == dict.fromkeys(("frozen", "nograd", "side", "head"), "backward_not_run")


def test_backward_hooks_that_cannot_fire_each_get_their_reason() -> None:
    model = _grad_model()
    model.side.weight.register_hook(lambda grad: None)
    model.nograd.weight.register_hook(lambda grad: None)
    model.head.weight.register_post_accumulate_grad_hook(lambda p: None)
    report = hookscope.doctor(model, torch.randn(2, 4), backward=True)
    codes = {(h.module, h.kind): (h.code, h.fired) for h in report.hooks}
    assert codes == {
        ("frozen", "backward"): ("nothing_requires_grad", 0),
        ("nograd", "backward"): ("grad_disabled", 0),
        ("side", "backward"): ("output_not_in_loss", 0),
        ("head", "backward"): (None, 1),
        ("nograd.weight", "tensor_grad"): ("grad_disabled", 0),
        ("side.weight", "tensor_grad"): ("output_not_in_loss", 0),
        ("head.weight", "post_accumulate_grad"): (None, 1),
    }
    assert model.head.weight.grad is None  # the doctor's backward left no gradient behind


def test_backward_hooks_under_inference_mode() -> None:
    model = _grad_model()
    with torch.inference_mode():
        report = hookscope.doctor(model, torch.randn(2, 4), backward=True)
    assert {h.code for h in report.hooks} == {"inference_mode"}


def test_planted_bypass_in_small_cnn_is_found_on_head() -> None:
    report = hookscope.doctor(SmallCNN(plant_bypass=True), torch.randn(2, 3, 32, 32))
    assert [(b.module, b.module_type, b.count) for b in report.bypasses] == [("head", "Linear", 1)]
    assert report.modules_executed == report.modules_total == 12
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is False
    assert data["bypasses"][0]["fix"] == "return self.head(x)"


def test_doctor_leaves_model_state_and_hooks_as_they_were() -> None:
    model = SmallCNN()
    model.features[0].register_forward_hook(lambda m, a, o: None)
    model.head.weight.register_hook(lambda grad: None)
    before, weights = hook_state(model), state_dict_copy(model)
    report = hookscope.doctor(model, torch.randn(4, 3, 32, 32), backward=True)
    assert report.ok
    assert hook_state(model) == before
    after = state_dict_copy(model)
    assert all(torch.equal(weights[k], after[k]) for k in weights)  # BatchNorm stats restored
    assert all(p.grad is None for p in model.parameters())
    assert not hasattr(nn.Linear.__dict__["forward"], "__hookscope_forward__")


def test_model_that_raises_gives_a_forward_error_naming_what_ran() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(5, 5))
    with pytest.raises(ForwardError, match=r"RuntimeError.*modules that ran.*0"):
        hookscope.doctor(model, torch.randn(2, 4))
    assert not hasattr(nn.Linear.__dict__["forward"], "__hookscope_forward__")


def test_bad_arguments_are_usage_errors_showing_the_value() -> None:
    with pytest.raises(hookscope.UsageError, match="list"):
        hookscope.doctor([nn.Linear(2, 2)], torch.randn(1, 2))  # type: ignore[arg-type]
    with pytest.raises(hookscope.UsageError, match="'yes'"):
        hookscope.doctor(nn.Linear(2, 2), torch.randn(1, 2), backward="yes")  # type: ignore[arg-type]
