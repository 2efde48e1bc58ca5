"""hookscope.capture: detached activations by qualified name, budget, release."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

import hookscope
from hookscope.errors import CaptureOverflowError, UsageError
from hookscope.zoo import SmallCNN


def test_captures_selected_outputs_by_name() -> None:
    model = SmallCNN().eval()
    x = torch.randn(2, 3, 32, 32)
    with hookscope.capture(model, "features.*", keep=True) as cache:
        model(x)
    assert list(cache) == [f"features.{i}" for i in range(8)]
    with torch.no_grad():
        expected = model.features[0](x)
        expected_pool = model.features(x)
    torch.testing.assert_close(cache["features.0"], expected)
    torch.testing.assert_close(cache["features.7"], expected_pool)
    assert cache["features.3"].shape == (2, 16, 16, 16)


def test_stored_tensors_are_detached_copies_on_cpu() -> None:
    model = SmallCNN()
    with hookscope.capture(model, "features.0", keep=True) as cache:
        out = model(torch.randn(1, 3, 32, 32))
        out.sum().backward()
    stored = cache["features.0"]
    assert not stored.requires_grad
    assert stored.grad_fn is None
    assert stored.device.type == "cpu"


class ConvInplaceRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv(x))


def test_clone_protects_against_later_inplace_ops() -> None:
    model = ConvInplaceRelu()
    x = torch.randn(1, 1, 8, 8)
    with torch.no_grad():
        raw = model.conv(x)
    assert (raw < 0).any()  # otherwise the test proves nothing
    with torch.no_grad(), hookscope.capture(model, "conv", keep=True) as cloned:
        model(x)
    torch.testing.assert_close(cloned["conv"], raw)
    with torch.no_grad(), hookscope.capture(model, "conv", clone=False, keep=True) as aliased:
        model(x)
    # Without a copy the stored tensor is the conv output the in-place ReLU overwrote.
    assert (aliased["conv"] >= 0).all()
    torch.testing.assert_close(aliased["conv"], raw.clamp_min(0))


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True)

    def forward(self, x: torch.Tensor) -> dict[str, object]:
        out, (h, c) = self.lstm(x)
        return {"out": out, "state": [h, c], "note": "not a tensor"}


def test_nested_outputs_are_stored_per_tensor_path() -> None:
    model = Nested()
    x = torch.randn(2, 3, 4)
    with torch.no_grad(), hookscope.capture(model, keep=True) as cache:
        result = model(x)
        out, (h, c) = model.lstm(x)
    assert sorted(cache) == sorted(
        ["lstm/0", "lstm/1/0", "lstm/1/1", "/out", "/state/0", "/state/1"]
    )
    torch.testing.assert_close(cache["lstm/1/0"], h)
    torch.testing.assert_close(cache["/state/1"], result["state"][1])


def test_module_called_twice_keeps_last_and_counts_calls() -> None:
    lin = nn.Linear(3, 3)
    model = nn.Sequential(lin, nn.Tanh(), lin)  # the same module at "0" and "2"
    x = torch.randn(1, 3)
    with torch.no_grad(), hookscope.capture(model, "0", keep=True) as cache:
        y = model(x)
    assert cache.calls == {"0": 2}
    torch.testing.assert_close(cache["0"], y)
    # Hand-computed: one stored (1, 3) float32 tensor = 3 * 4 bytes, not counted twice.
    assert cache.nbytes == 12


def test_released_on_exit_unless_kept() -> None:
    model = SmallCNN()
    with hookscope.capture(model, "features.0") as cache:
        model(torch.randn(1, 3, 32, 32))
        assert cache["features.0"].shape == (1, 16, 32, 32)
    assert len(cache) == 0
    assert cache.nbytes == 0
    with pytest.raises(KeyError, match="keep=True"):
        cache["features.0"]
    assert len(hookscope.list_hooks(model)) == 0


def test_max_bytes_overflow_names_the_key_and_stores_nothing_past_budget() -> None:
    model = SmallCNN().eval()
    # features.0 and features.1 each output (1, 16, 8, 8) float32 = 16 * 8 * 8 * 4 = 4096 bytes.
    budget = 4096 + 100
    with (
        pytest.raises(CaptureOverflowError, match=r"'features\.1'.*max_bytes=4196") as info,
        hookscope.capture(
            model, ["features.0", "features.1"], max_bytes=budget, keep=True
        ) as cache,
    ):
        model(torch.randn(1, 3, 8, 8))
    assert "4.0 KiB" in str(info.value)
    assert list(cache) == ["features.0"]
    assert cache.nbytes == 4096
    assert len(hookscope.list_hooks(model)) == 0


def test_hooks_removed_when_body_raises() -> None:
    model = SmallCNN()
    with pytest.raises(RuntimeError, match="boom"), hookscope.capture(model):
        assert len(hookscope.list_hooks(model)) > 0
        raise RuntimeError("boom")
    assert len(hookscope.list_hooks(model)) == 0


def test_bypassed_module_is_not_captured() -> None:
    model = SmallCNN(plant_bypass=True)
    with hookscope.capture(model, ["features.0", "head"], keep=True) as cache:
        model(torch.randn(1, 3, 32, 32))
    # head.forward() is called directly, so its forward hook never fires.
    assert list(cache) == ["features.0"]


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [({"max_bytes": -1}, "-1"), ({"max_bytes": 1.5}, "1.5"), ({"to": "nowhere"}, "nowhere")],
)
def test_bad_options_show_the_value(kwargs: dict[str, object], shown: str) -> None:
    with pytest.raises(UsageError, match=shown):
        hookscope.capture(SmallCNN(), **kwargs)  # type: ignore[arg-type]


def test_bad_selector_is_a_usage_error_and_leaves_no_hooks() -> None:
    model = SmallCNN()
    with pytest.raises(UsageError, match="42"), hookscope.capture(model, 42):  # type: ignore[arg-type]
        pass
    assert len(hookscope.list_hooks(model)) == 0


def test_threads_keep_byte_count_consistent() -> None:
    model = SmallCNN().eval()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad(), hookscope.capture(model, leaves_only=True, keep=True) as cache:
        threads = [threading.Thread(target=model, args=(x,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert set(cache.calls.values()) == {4}
    assert cache.nbytes == sum(t.numel() * t.element_size() for t in cache.values())
