"""The meta-op cache: repeated ops on the same shapes run once, and nothing else changes."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hookscope.summary import opcache
from hookscope.summary.collect import run_forward
from hookscope.summary.opcache import OpCache
from hookscope.zoo import resnet50_like

META = torch.device("meta")


def _no_cache() -> None:
    return None


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(16), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(self.norm(x)).relu_()  # in place: never cached
        return x + torch.nn.functional.gelu(y).transpose(1, 2).transpose(1, 2)


def rows(model: nn.Module, x: torch.Tensor, cache: bool) -> list[tuple[object, ...]]:
    with pytest.MonkeyPatch.context() as patch:
        if not cache:
            patch.setattr(opcache, "shared", _no_cache)
        got = run_forward(model, (x,), {}, META)
    out = got.output
    return [
        (r.name, r.input_shapes, r.output_shapes, r.output_bytes, r.macs) for r in got.records
    ] + [(tuple(out.shape), out.stride(), out.dtype, got.counter.total)]


def test_cached_meta_run_equals_the_uncached_one() -> None:
    transformer = nn.Sequential(*[Layer() for _ in range(4)])
    tokens = torch.empty(2, 8, 16, device=META)
    assert rows(transformer, tokens, True) == rows(transformer, tokens, False)
    images = torch.empty(1, 3, 64, 64, device=META).to(memory_format=torch.channels_last)
    assert rows(resnet50_like(), images, True) == rows(resnet50_like(), images, False)


def test_repeats_are_served_from_the_cache_and_views_never_are() -> None:
    cache = OpCache()
    aten = torch.ops.aten
    x = torch.empty(4, 8, device=META)
    first = cache.run(aten.gelu.default, (x,), {})
    again = cache.run(aten.gelu.default, (x,), {})
    assert again is not first and (again.shape, again.stride()) == (first.shape, first.stride())
    assert len(cache._specs) == 1
    assert cache.run(aten.relu_.default, (x,), {}) is x  # in place: the op itself ran
    view = cache.run(aten.t.default, (x,), {})
    assert view._base is x and len(cache._specs) == 1


def test_ops_with_two_outputs_come_back_as_two_tensors() -> None:
    cache = OpCache()
    x = torch.empty(4, 8, device=META)
    for _ in range(2):  # the second from the cache
        values, indices = cache.run(torch.ops.aten.max.dim, (x, 1), {})
        assert (values.shape, indices.dtype) == ((4,), torch.int64)


class TwoMaxima(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x).max(dim=-1, keepdim=True).values.expand(-1, 8)).max(dim=-1).values


def test_summaries_share_the_cache_and_stay_on_the_meta_device() -> None:
    import hookscope

    first = hookscope.summary(TwoMaxima(), input_size=(2, 8))
    before = len(opcache.shared()._specs)
    second = hookscope.summary(TwoMaxima(), input_size=(2, 8))
    assert len(opcache.shared()._specs) == before  # every op of the second run was known
    assert first.fallback_reason is None and second.fallback_reason is None
    assert [(r.name, r.output_shapes, r.macs) for r in first.rows] == [
        (r.name, r.output_shapes, r.macs) for r in second.rows
    ]


def test_the_default_dtype_is_part_of_the_key() -> None:
    cache = OpCache()
    old = torch.get_default_dtype()
    try:
        for dtype in (torch.float32, torch.float64):
            torch.set_default_dtype(dtype)
            assert cache.run(torch.ops.aten.zeros.default, ([3],), {"device": META}).dtype == dtype
    finally:
        torch.set_default_dtype(old)


def test_the_cache_keeps_at_most_max_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opcache, "MAX_ENTRIES", 2)
    cache = OpCache()
    for n in (1, 2, 3):
        cache.run(torch.ops.aten.gelu.default, (torch.empty(n, device=META),), {})
    assert [key[1][0][0] for key in cache._specs] == [(2,), (3,)]  # the oldest went first
