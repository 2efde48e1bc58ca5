"""Monitor on real training loops: statistics, steps, phases, dtypes, hooks cleaned up."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import hookscope
from hookscope import Monitor, UsageError
from hookscope.zoo import SmallCNN
from tests.monitor.models import InplaceBlock, train_step


def captured_outputs(model: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Leaf outputs of one forward, captured with a plain hookscope session."""
    outs: dict[str, torch.Tensor] = {}

    def keep(name: str, _module: nn.Module, _args: object, out: torch.Tensor) -> None:
        outs[name] = out.detach().clone()

    with hookscope.session(model) as s:
        s.add_forward_hook(keep, leaves_only=True)
        with torch.no_grad():
            model(x)
    return outs


def test_forward_stats_match_numpy_reference() -> None:
    model = SmallCNN().eval()
    x = torch.randn(4, 3, 32, 32)
    reference = captured_outputs(model, x)
    with Monitor(model) as mon, torch.no_grad():
        model(x)
        mon.step()
    df = mon.to_pandas()
    assert list(df.columns) == ["step", "phase", "module", "tensor", "stat", "value", "rank"]
    for name, out in reference.items():
        a = out.double().numpy().ravel()
        rows = df[(df.module == name) & (df.tensor == "output")].set_index("stat").value
        assert rows["mean"] == pytest.approx(a.mean(), rel=1e-4, abs=1e-6)
        assert rows["std"] == pytest.approx(a.std(), rel=1e-4)
        assert rows["min"] == pytest.approx(a.min(), rel=1e-6)
        assert rows["max"] == pytest.approx(a.max(), rel=1e-6)
        assert rows["absmax"] == pytest.approx(np.abs(a).max(), rel=1e-6)
        assert rows["rms"] == pytest.approx(np.sqrt((a * a).mean()), rel=1e-4)
        assert rows["nan_count"] == 0 and rows["inf_count"] == 0
    relu = df[(df.module == "features.2")].set_index("stat").value
    assert relu["zero_frac"] == pytest.approx((reference["features.2"] == 0).double().mean().item())
    # zero fraction is computed for activation modules only (by default)
    assert "zero_frac" not in set(df[df.module == "features.0"].stat)


def test_training_loop_has_all_phases() -> None:
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model) as mon:
        for _ in range(3):
            train_step(model, torch.randn(2, 3, 32, 32), opt)
            mon.step()
    df = mon.to_pandas()
    assert sorted(df.step.unique()) == [0, 1, 2]
    assert set(df.phase) == {"forward", "backward", "param"}
    grads = df[(df.phase == "param") & (df.stat == "norm")]
    assert set(grads.module) == {n for n, _ in model.named_parameters()}
    assert (grads.value > 0).all()
    assert set(df[df.phase == "backward"].stat) == {"norm", "rms", "nan_count", "inf_count"}
    assert mon.first_nonfinite is None
    # a conv bias right before BatchNorm has a zero gradient: a true vanishing alert
    assert {(a.rule, a.module) for a in mon.alerts} <= {
        ("vanishing", "features.0.bias"),
        ("vanishing", "features.4.bias"),
    }


def test_backward_norm_is_the_output_gradient_norm() -> None:
    model = nn.Sequential(nn.Linear(5, 3), nn.Linear(3, 2))
    x = torch.randn(4, 5)
    with Monitor(model, params=False) as mon:
        hidden = model[0](x)
        hidden.retain_grad()
        model[1](hidden).sum().backward()
        mon.step()
    df = mon.to_pandas().set_index(["phase", "module", "stat"]).value
    assert df["backward", "0", "norm"] == pytest.approx(hidden.grad.norm().item(), rel=1e-6)
    assert df["backward", "1", "norm"] == pytest.approx(np.sqrt(4 * 2))  # d(sum)/d(out) = 1


def test_parameter_gradient_norm_and_update_ratio() -> None:
    model = nn.Linear(6, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(3, 6)
    with Monitor(model, update_ratio=True) as mon:
        mon.step()  # snapshot of the initial weights
        before = model.weight.detach().clone()
        train_step(model, x, opt)
        grad = model.weight.grad.clone()
        mon.step()
    df = mon.to_pandas().set_index(["step", "phase", "module", "stat"]).value
    assert df[1, "param", "weight", "norm"] == pytest.approx(grad.norm().item(), rel=1e-6)
    expected = (model.weight.detach() - before).norm() / model.weight.detach().norm()
    assert df[1, "param", "weight", "update_ratio"] == pytest.approx(expected.item(), rel=1e-5)


def test_every_records_only_some_steps() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with Monitor(model, every=3) as mon:
        returned = []
        for _ in range(7):
            model(torch.randn(2, 4))
            returned.append(mon.step())
    assert [r is not None for r in returned] == [True, False, False, True, False, False, True]
    assert sorted(mon.to_pandas().step.unique()) == [0, 3, 6]


def test_module_called_twice_is_merged() -> None:
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.Tanh(), shared)
    x = torch.randn(3, 4)
    with torch.no_grad():
        first = shared(x)
        second = shared(torch.tanh(first))
    both = torch.cat([first.ravel(), second.ravel()]).double().numpy()
    with Monitor(model) as mon, torch.no_grad():
        model(x)
        mon.step()
    rows = mon.to_pandas().query("module == '0'").set_index("stat").value
    assert rows["mean"] == pytest.approx(both.mean(), rel=1e-5)
    assert rows["min"] == pytest.approx(both.min())
    assert rows["max"] == pytest.approx(both.max())


def test_inputs_option_reports_inputs() -> None:
    model = nn.Sequential(nn.Linear(4, 4))
    x = torch.randn(2, 4)
    with Monitor(model, inputs=True) as mon, torch.no_grad():
        model(x)
        mon.step()
    rows = mon.to_pandas().query("tensor == 'input[0]'").set_index("stat").value
    assert rows["mean"] == pytest.approx(x.mean().item(), rel=1e-5)


def test_inplace_relu_does_not_break_backward() -> None:
    model = InplaceBlock()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model) as mon:
        train_step(model, torch.randn(2, 4, 6, 6), opt)
        mon.step()
    back = mon.to_pandas().query("phase == 'backward' and stat == 'norm'")
    assert {"conv", "bn", "relu", "head"} <= set(back.module)
    assert mon.errors == []


def test_bf16_autocast_on_cpu() -> None:
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Monitor(model) as mon:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(torch.randn(2, 3, 32, 32)).float().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        result = mon.step()
    assert result is not None
    dtypes = {(t.module, t.phase): t.dtype for t in result.tensors}
    assert dtypes["features.0", "forward"] == "bfloat16"
    values = np.array([r.value for r in result.records])
    assert np.isfinite(values).all()


def test_eval_steps_under_no_grad() -> None:
    model = SmallCNN()
    with Monitor(model) as mon:
        with torch.no_grad():
            model(torch.randn(2, 3, 32, 32))
        mon.step()
    assert set(mon.to_pandas().phase) == {"forward"}


def test_hooks_removed_on_exit_even_after_error() -> None:
    model = SmallCNN()
    with pytest.raises(RuntimeError, match="boom"), Monitor(model):
        model(torch.randn(1, 3, 32, 32))
        raise RuntimeError("boom")
    assert list(hookscope.list_hooks(model)) == []
    assert all(p._post_accumulate_grad_hooks is None for p in model.parameters())


def test_no_item_tolist_or_cpu_inside_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    model = SmallCNN()
    calls: list[str] = []
    for name in ("item", "tolist", "cpu"):
        original = getattr(torch.Tensor, name)

        def counting(
            self: torch.Tensor, *a: object, _n: str = name, _o: object = original, **k: object
        ) -> object:
            calls.append(_n)
            return _o(self, *a, **k)  # type: ignore[operator]

        monkeypatch.setattr(torch.Tensor, name, counting)
    with Monitor(model) as mon:
        model(torch.randn(2, 3, 32, 32)).sum().backward()
        hooks_calls = list(calls)
        mon.step()
    assert hooks_calls == []
    assert calls.count("cpu") == 1  # the one transfer, in step()


def test_options_are_validated() -> None:
    model = nn.Linear(2, 2)
    with pytest.raises(UsageError, match="every"):
        Monitor(model, every=0)
    with pytest.raises(UsageError, match="bogus"):
        Monitor(model, stats=["mean", "bogus"])
    with pytest.raises(UsageError, match="zeros"):
        Monitor(model, zeros="some")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="explode_above"):
        Monitor(model, explode_above=-1)
    with pytest.raises(UsageError, match="open monitor"):
        Monitor(model).step()


def test_stats_subset() -> None:
    model = nn.Sequential(nn.Linear(3, 3))
    with Monitor(model, stats=["mean", "absmax"]) as mon, torch.no_grad():
        model(torch.randn(2, 3))
        mon.step()
    assert set(mon.to_pandas().stat) == {"mean", "absmax"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_no_host_sync_inside_a_cuda_forward_and_backward() -> None:
    model = SmallCNN().cuda()
    x = torch.randn(4, 3, 32, 32, device="cuda")
    with Monitor(model) as mon:
        model(x).sum().backward()  # warm-up: lazy CUDA initialisation may sync
        mon.step()
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            model(x).sum().backward()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        result = mon.step()
    assert result is not None and len(result.records) > 0


@pytest.mark.parametrize("reentrant", [False, True])
def test_activation_checkpointing_is_recorded_once(reentrant: bool) -> None:
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def __init__(self, use_checkpoint: bool) -> None:
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
            self.head = nn.Linear(8, 1)
            self.use_checkpoint = use_checkpoint

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.use_checkpoint:
                x = checkpoint(self.block, x, use_reentrant=reentrant)
            else:
                x = self.block(x)
            return self.head(x)

    x = torch.randn(3, 4, requires_grad=reentrant)  # reentrant needs an input that requires grad
    frames, forward_entries = [], []
    for use_checkpoint in (False, True):
        torch.manual_seed(0)
        model = Net(use_checkpoint)
        with Monitor(model) as mon:
            model(x).sum().backward()
            collector = mon._collector
            assert collector is not None
            forward_entries.append(sum(e.phase == "forward" for e in collector.entries))
            mon.step()
        frames.append(mon.to_pandas().set_index(["phase", "module", "tensor", "stat"]).value)
    # the recompute inside backward took no statistics again
    assert forward_entries[1] == forward_entries[0]
    # and module output gradients are there in both modes
    assert frames[1].to_dict() == pytest.approx(frames[0].to_dict(), rel=1e-6)
    assert ("backward", "block.0", "output", "norm") in frames[1]
