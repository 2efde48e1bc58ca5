"""Scoped hook sessions on real models: selection, policies, cleanup, nesting, threads."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import HookError, HookWarning, UsageError
from hookscope.zoo import SmallCNN
from tests.fixtures.models import KwargsBlock, Raises, Shared, mlp, tiny_bert, tiny_gpt2
from tests.hooks.state import assert_same_state_dict, hook_state, state_dict_copy


def _add_every_kind(s: hookscope.HookSession, calls: list[str]) -> None:
    s.add_forward_pre_hook(lambda name, m, args: calls.append(f"pre:{name}"))
    s.add_forward_hook(lambda name, m, args, out: calls.append(f"fwd:{name}"))
    s.add_backward_hook(lambda name, m, gi, go: calls.append(f"bwd:{name}"))
    s.add_backward_pre_hook(lambda name, m, go: calls.append(f"bpre:{name}"))
    s.add_grad_hook(lambda name, p: calls.append(f"grad:{name}"))


def test_every_kind_fires_with_the_qualified_name() -> None:
    model = mlp()
    calls: list[str] = []
    with hookscope.session(model) as s:
        _add_every_kind(s, calls)
        model(torch.randn(2, 8)).sum().backward()
    assert "pre:0" in calls and "fwd:2" in calls and "fwd:" in calls
    assert "bwd:2" in calls and "bpre:0" in calls
    assert {c for c in calls if c.startswith("grad:")} == {
        "grad:0.weight",
        "grad:0.bias",
        "grad:2.weight",
        "grad:2.bias",
    }
    # forward pre hooks fire before forward hooks on the same module
    assert calls.index("pre:0") < calls.index("fwd:0")


def test_exit_leaves_exactly_the_previous_state() -> None:
    model = SmallCNN().eval()  # eval: BatchNorm running stats stay as they are
    user_handle = model.head.register_forward_hook(lambda m, a, o: None)
    before, weights = hook_state(model), state_dict_copy(model)
    with hookscope.session(model) as s:
        _add_every_kind(s, [])
        model(torch.randn(2, 3, 32, 32)).sum().backward()
        assert hook_state(model) != before
    assert hook_state(model) == before
    model.zero_grad(set_to_none=True)
    assert_same_state_dict(state_dict_copy(model), weights)
    assert len(model.head._forward_hooks) == 1  # the user's own hook is untouched
    user_handle.remove()


def test_hooks_removed_when_forward_raises() -> None:
    model = Raises()
    before = hook_state(model)
    fired: list[str] = []
    with pytest.raises(RuntimeError, match="boom"), hookscope.session(model) as s:
        s.add_forward_hook(lambda name, m, a, o: fired.append(name))
        s.add_forward_hook(lambda name, m, a, o: fired.append(f"always:{name}"), always_call=True)
        model(torch.randn(1, 3))
    assert fired == ["first", "always:first", "always:"]
    assert hook_state(model) == before


def test_selection_by_glob_type_predicate_and_leaves() -> None:
    model = SmallCNN()
    with hookscope.session(model) as s:
        assert {r.name for r in s.add_forward_hook(_noop, "features.*").registrations} == {
            f"features.{i}" for i in range(8)
        }
        convs = s.add_forward_hook(_noop, nn.Conv2d).registrations
        assert [r.name for r in convs] == ["features.0", "features.4"]
        pred = s.add_forward_hook(_noop, lambda n, m: n.endswith("5")).registrations
        assert [r.name for r in pred] == ["features.5"]
        leaves = s.add_forward_hook(_noop, leaves_only=True).registrations
        assert "" not in {r.name for r in leaves} and "features" not in {r.name for r in leaves}
        assert len(leaves) == 10
        mixed = s.add_forward_hook(_noop, ["head", nn.Flatten]).registrations
        assert [r.name for r in mixed] == ["flatten", "head"]


def _noop(*args: Any) -> None:
    return None


@pytest.mark.parametrize("bad", [3.5, int, object()])
def test_bad_selector_is_a_usage_error(bad: Any) -> None:
    with hookscope.session(mlp()) as s, pytest.raises(UsageError, match="modules="):
        s.add_forward_hook(_noop, bad)


def test_options_are_validated_with_the_bad_value() -> None:
    with pytest.raises(UsageError, match="'explode'"):
        hookscope.session(mlp(), on_error="explode")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="inside"):
        hookscope.session(mlp()).add_forward_hook(_noop)


def _broken(name: str, module: nn.Module, args: Any, output: Any) -> None:
    raise ValueError(f"broken on {name}")


def test_on_error_raise_names_module_and_hook_and_cleans_up() -> None:
    model = mlp()
    before = hook_state(model)
    with pytest.raises(HookError) as info, hookscope.session(model) as s:
        s.add_forward_hook(_broken, "2")
        model(torch.randn(1, 8))
    assert info.value.module_name == "2"
    assert "_broken" in info.value.hook_name
    assert "module '2'" in str(info.value) and "ValueError" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert hook_state(model) == before


def test_on_error_warn_keeps_going_warns_once_and_records() -> None:
    model = mlp()
    x = torch.randn(3, 8)
    expected = model(x)
    with hookscope.session(model, on_error="warn") as s:
        s.add_forward_hook(_broken, "0")
        with pytest.warns(HookWarning, match="broken on 0") as record:
            out1 = model(x)
            out2 = model(x)
        assert len(record) == 1
        assert torch.equal(out1, expected) and torch.equal(out2, expected)
        assert len(s.errors) == 2
        assert s.errors[0].module == "0" and "ValueError" in s.errors[0].traceback
        assert s.fired["0"] == {"forward:tests.hooks.test_session._broken": 2}


def test_on_error_disable_removes_the_failing_hook_only() -> None:
    model = mlp()
    seen: list[str] = []
    with hookscope.session(model, on_error="disable") as s:
        s.add_forward_hook(_broken, "0")
        s.add_forward_hook(lambda name, m, a, o: seen.append(name), "2")
        with pytest.warns(HookWarning, match="disabled"):
            model(torch.randn(1, 8))
        model(torch.randn(1, 8))
        assert len(s.errors) == 1
        assert seen == ["2", "2"]
        assert len(model[0]._forward_hooks) == 0
        assert s.fired["0"]["forward:tests.hooks.test_session._broken"] == 1


def test_error_policy_applies_to_backward_and_grad_hooks() -> None:
    model = mlp()

    def bad_backward(name: str, m: nn.Module, gi: Any, go: Any) -> None:
        raise KeyError("bwd")

    def bad_grad(name: str, p: torch.Tensor) -> None:
        raise KeyError("grad")

    with hookscope.session(model, on_error="warn") as s:
        s.add_backward_hook(bad_backward, "2")
        s.add_grad_hook(bad_grad, "0.weight")
        with pytest.warns(HookWarning):
            model(torch.randn(2, 8)).sum().backward()
        assert {e.kind for e in s.errors} == {"backward", "grad"}
    assert model[0].weight.grad is not None
    with pytest.raises(HookError, match="parameter '0.weight'"), hookscope.session(model) as s:
        s.add_grad_hook(bad_grad, "0.weight")
        model(torch.randn(2, 8)).sum().backward()


def test_hook_return_value_replaces_output() -> None:
    model = mlp()
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda name, m, a, out: torch.zeros_like(out), "2")
        assert torch.count_nonzero(model(torch.randn(2, 8))) == 0
    assert torch.count_nonzero(model(torch.randn(2, 8))) > 0


def test_with_kwargs_hooks_see_and_change_keyword_arguments() -> None:
    model = KwargsBlock()
    seen: dict[str, Any] = {}

    def pre(name: str, m: nn.Module, args: Any, kwargs: dict[str, Any]) -> Any:
        seen["pre"] = dict(kwargs)
        return args, {**kwargs, "scale": 0.0}

    def post(name: str, m: nn.Module, args: Any, kwargs: dict[str, Any], out: Any) -> None:
        seen["post"] = (name, dict(kwargs))

    with hookscope.session(model) as s:
        s.add_forward_pre_hook(pre, "", with_kwargs=True)
        s.add_forward_hook(post, "", with_kwargs=True)
        out = model(torch.ones(1, 4), scale=2.0)
    assert seen["pre"] == {"scale": 2.0}
    assert seen["post"] == ("", {"scale": 0.0})
    assert torch.count_nonzero(out) == 0


def test_prepend_runs_before_existing_hooks() -> None:
    model = mlp()
    order: list[str] = []
    handle = model[0].register_forward_hook(lambda m, a, o: order.append("user"))
    with hookscope.session(model) as s:
        s.add_forward_hook(lambda *a: order.append("scoped"), "0", prepend=True)
        model(torch.randn(1, 8))
    handle.remove()
    assert order == ["scoped", "user"]


def test_nested_sessions_remove_only_their_own_hooks() -> None:
    model = mlp()
    before = hook_state(model)
    with hookscope.session(model) as outer:
        outer.add_forward_hook(_noop, "0")
        with hookscope.session(model) as inner:
            inner.add_forward_hook(_noop, "0")
            assert inner.depth == 2 and outer.depth == 1
            assert len(model[0]._forward_hooks) == 2
            model(torch.randn(1, 8))
        assert len(model[0]._forward_hooks) == 1
        model(torch.randn(1, 8))
        assert outer.fired["0"]["forward:tests.hooks.test_session._noop"] == 2
        assert inner.fired["0"]["forward:tests.hooks.test_session._noop"] == 1
    assert hook_state(model) == before


def test_shared_module_is_hooked_once_and_reported_under_every_name() -> None:
    model = Shared()
    with hookscope.session(model) as s:
        group = s.add_forward_hook(_noop, "a")
        assert len(group) == 1 and group.registrations[0].names == ("a", "b")
        model(torch.randn(1, 4))
        assert s.fired["a"] == s.fired["b"] == {"forward:tests.hooks.test_session._noop": 2}
    inventory = hookscope.list_hooks(model)
    assert inventory == []


def test_two_threads_attribute_firings_correctly() -> None:
    model = mlp()
    seen: dict[str, list[float]] = {}
    lock = threading.Lock()

    def hook(name: str, m: nn.Module, args: Any, out: torch.Tensor) -> None:
        if name == "0":
            with lock:  # by thread name: a finished thread's ident can be reused at once
                seen.setdefault(threading.current_thread().name, []).append(float(args[0][0, 0]))

    def work(value: float) -> None:
        x = torch.full((1, 8), value)
        for _ in range(200):
            model(x)

    with hookscope.session(model) as s:
        s.add_forward_hook(hook)
        threads = [threading.Thread(target=work, args=(v,)) for v in (1.0, 2.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
            assert not t.is_alive(), "a hooked forward thread did not finish"
        assert s.fired["0"]["forward:" + hook.__module__ + "." + hook.__qualname__] == 400
        assert sum(sum(c.values()) for c in s.fired.values()) == 400 * 4
    assert sorted(tuple(set(v)) for v in seen.values()) == [(1.0,), (2.0,)]


def test_handle_group_remove_is_idempotent() -> None:
    model = mlp()
    with hookscope.session(model) as s:
        group = s.add_forward_hook(_noop)
        group.remove()
        group.remove()
        assert all(len(m._forward_hooks) == 0 for m in model.modules())


def test_detached_lists_hooks_on_replaced_modules() -> None:
    model = SmallCNN()
    with hookscope.session(model) as s:
        s.add_forward_hook(_noop, "head")
        model.head = nn.Linear(512, 10)
        assert [r.name for r in s.detached()] == ["head"]


def test_thousand_cycles_leave_no_hooks_and_no_growth() -> None:
    model = SmallCNN()
    x = torch.randn(1, 3, 32, 32)
    before = hook_state(model)

    def cycle() -> None:
        with hookscope.session(model) as s:
            s.add_forward_hook(_noop, leaves_only=True)
            s.add_forward_pre_hook(_noop, nn.Conv2d)
            s.add_backward_hook(_noop, "head")
            s.add_grad_hook(_noop, "head.*")
            model(x).sum().backward()

    for _ in range(20):  # warm caches
        cycle()
    gc.collect()
    objects = len(gc.get_objects())
    tensors = sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor))
    for _ in range(1000):
        cycle()
    gc.collect()
    assert hook_state(model) == before
    assert sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor)) <= tensors
    assert len(gc.get_objects()) - objects < 200


def test_huggingface_bert_and_gpt2_sessions_clean_up() -> None:
    for model, inputs in (
        (tiny_bert(), {"input_ids": torch.randint(0, 100, (2, 10))}),
        (tiny_gpt2(), {"input_ids": torch.randint(0, 100, (2, 10))}),
    ):
        before, weights = hook_state(model), state_dict_copy(model)
        with hookscope.session(model, on_error="warn") as s:
            s.add_forward_hook(_noop, ["*attn*", "*attention*"])  # GPT-2, BERT
            s.add_forward_hook(_noop, nn.Linear)
            s.add_backward_hook(_noop, nn.LayerNorm)
            out = model(**inputs)
            logits = out[0]
            logits.float().pow(2).mean().backward()
            fired = {name for name, counts in s.fired.items() if sum(counts.values())}
            assert any("attn" in name or "attention" in name for name in fired)
            assert not s.errors
        assert hook_state(model) == before
        model.zero_grad(set_to_none=True)
        assert_same_state_dict(state_dict_copy(model), weights)


def test_bad_bypass_selector_leaves_the_session_closed() -> None:
    model = mlp()
    s = hookscope.session(model, detect_bypass=True, bypass_modules=3.5)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="modules="), s:
        pass
    assert not s.active
    with hookscope.session(model) as fresh:
        assert fresh.depth == 1


def test_grad_hook_globs_match_names_without_wrapper_components() -> None:
    class Compiled(nn.Module):  # what torch.compile's wrapper looks like to named_parameters
        def __init__(self) -> None:
            super().__init__()
            self._orig_mod = mlp()

    model = Compiled()
    calls: list[str] = []
    for keep in (False, True):
        with hookscope.session(model, keep_wrappers=keep) as s:
            s.add_grad_hook(lambda name, p: calls.append(name), "0.weight")
            model._orig_mod(torch.randn(2, 8)).sum().backward()
    assert calls == ["0.weight", "_orig_mod.0.weight"]  # the hook's name: unwrapped unless kept
