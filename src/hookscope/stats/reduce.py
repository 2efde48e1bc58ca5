"""Reducing a tensor on its own device, then turning the reductions into statistics.

The hot path (`reduce_tensor`) never reads a device value back. It takes, in
order of preference:

* CPU tensors (float16/bfloat16/float32/float64, dense in any memory order):
  one pass of the C kernel (`hookscope.stats.native`) for sum, sum of
  squares, min, max and the non-zero count, as host floats. Exact NaN / Inf
  counts are computed only when the sum or sum of squares is non-finite.
* ``Plan.fused`` (meant for GPUs): one ``torch.compile``d pass
  (`hookscope.stats.fused`).
* otherwise eager reductions launched on the device: sum (mean), BLAS ``dot``
  or ``vector_norm`` (sum of squares: std, RMS, norm) and ``aminmax`` (min,
  max, abs-max), with ``float32`` accumulators for half-precision inputs.
  ``var_mean`` would cost 20-40x a ``sum`` on CPU and ``(~isfinite).sum()``
  50-90x. NaN propagates through sum, norm and aminmax and an Inf shows in
  them, so exact counts are needed only when one of those is non-finite: on
  CPU the hook reads that value (host memory, no synchronisation); on other
  devices branching would synchronise, so the counts are always computed
  there. The optional zero count (`Plan.zeros`): ``"count"`` uses
  ``count_nonzero`` (5-11x one ``sum`` on float CPU tensors), ``"nonneg"``,
  for outputs known to be >= 0 (ReLU), counts on the same-size integer view
  (about 1.5x one ``sum``).

Numerical guarantees (tested against NumPy in ``tests/stats``): finite
input gives finite statistics; mean and std keep about 1e-3 relative
accuracy (usually ~1e-6) also when ``|mean| >> std``, because the moments
are taken of ``x - shift`` with ``shift`` near the mean (the kernel's first
finite element; on CPU eager, a second shifted pass when the first shows
cancellation; ``var_mean`` on other devices); sums that overflow their
accumulator (fp32 above ~1e19, float64 above ~1e154) are taken again on
``x / 2**k`` in float64 (CPU). std is the population std (``ddof=0`` as
``numpy.std``). As ``numpy.min``, min and max are NaN when the tensor holds
a NaN; +Inf and -Inf together give ``absmax = inf``. `summarize` never
raises on fetched values.

`fetch` then moves every pending value of a step to the host in one transfer
per device, and `summarize` computes the named statistics from them.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import torch

from hookscope.stats import accuracy, native
from hookscope.stats.reduction import Kind, Reduction, Value

#: Statistics of activations (forward), in the order they are reported.
ACTIVATION_STATS = (
    "mean",
    "std",
    "min",
    "max",
    "absmax",
    "rms",
    "zero_frac",
    "nan_count",
    "inf_count",
)
#: Statistics of gradients (module output grads and parameter grads).
GRAD_STATS = ("norm", "rms", "nan_count", "inf_count")
#: Every statistic name `summarize` can produce.
ALL_STATS = (*ACTIVATION_STATS, "norm")

Zeros = Literal["none", "count", "nonneg"]

_LOW_PRECISION = (torch.float16, torch.bfloat16)
_NATIVE_FLOAT = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_SAME_SIZE_INT = {
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}
_FIELDS = ("sum", "norm", "sumsq", "shift", "min", "max", "nonzero", "nan", "inf")
_MOMENTS = ("sum", "norm", "sumsq", "shift")
_DOT = (torch.float32, torch.float64)


@dataclass(frozen=True)
class Plan:
    """Which reductions to take of one tensor.

    Attributes:
        sum: the sum (mean, std).
        squares: the 2-norm (std, RMS, norm).
        extrema: min and max (abs-max).
        zeros: how to count zeros: ``"none"``, ``"count"`` or ``"nonneg"``.
        fused: take sum, norm, min, max (and the zero count) in one compiled
            pass where possible (see `hookscope.stats.fused`).
    """

    sum: bool = True
    squares: bool = True
    extrema: bool = True
    zeros: Zeros = "none"
    fused: bool = False


def plan_for(stats: Collection[str], zeros: Zeros = "count", *, fused: bool = False) -> Plan:
    """The cheapest `Plan` that yields ``stats`` (names from `ALL_STATS`)."""
    return Plan(
        sum=bool({"mean", "std"} & set(stats)),
        squares=bool({"std", "rms", "norm"} & set(stats)),
        extrema=bool({"min", "max", "absmax"} & set(stats)),
        zeros=zeros if "zero_frac" in stats else "none",
        fused=fused,
    )


def kind_of(tensor: torch.Tensor) -> Kind:
    """How a tensor is reduced: ``float``, ``complex``, ``int``, ``bool`` or ``skip``."""
    if tensor.layout != torch.strided or tensor.device.type == "meta":
        return "skip"
    if tensor.dtype == torch.bool:
        return "bool"
    if tensor.is_complex():
        return "complex"
    if tensor.is_floating_point():
        return "float"
    return "int"


def reduce_tensor(tensor: torch.Tensor, plan: Plan, shift: float | None = None) -> Reduction:
    """Launch the reductions of ``plan`` on ``tensor``'s device; never synchronises.

    Empty tensors, meta tensors and non-strided layouts get no reductions.
    Bool tensors get only their sum (mean, min, max, zero fraction); integer
    tensors are reduced in float64; complex tensors by magnitude.

    Args:
        tensor: the tensor.
        plan: which reductions.
        shift: on CPU, the value the moments are taken around (exact in the
            tensor's precision); None: its first element. A good guess (0.0 for
            a tensor whose mean was tiny last step) saves `accuracy.repair`'s
            second pass. Plans without the sum always use 0.0: a norm needs
            no shift.
    """
    got = native.moments(tensor, shift if plan.sum else 0.0)  # dense float CPU: one pass
    if got is not None:
        red = Reduction("float", got.n)
        if got.n:
            _from_moments(tensor, got, plan, red)
        return red
    kind = kind_of(tensor)
    red = Reduction(kind, tensor.numel())
    if kind == "skip" or red.numel == 0:
        return red
    t = tensor.detach()
    if kind == "bool":
        red.sum = t.sum()
        return red
    if kind == "complex":
        t = t.abs()
    elif kind == "int":
        t = t.to(torch.float64)
    elif t.dtype not in _NATIVE_FLOAT:
        t = t.to(torch.float32)  # float8 and friends
    if _native(t, plan, red) or (plan.fused and kind == "float" and _fused(t, plan, red)):
        return red
    _eager(t, plan, red)
    if kind == "int":
        red.nan = red.inf = 0.0
    else:
        # min and max (or sum, or norm) show any NaN or Inf in the tensor
        fields = (red.min, red.max, red.sum, red.norm, red.sumsq)
        _count_nonfinite(t, red, [v for v in fields if isinstance(v, torch.Tensor)][:2])
    if t.device.type == "cpu" and (plan.sum or plan.squares):
        accuracy.repair(t, red)
    return red


def reduce_with_relu(
    tensor: torch.Tensor, plan: Plan, relu_plan: Plan, shift: float | None = None
) -> tuple[Reduction, Reduction | None]:
    """`reduce_tensor` of ``tensor``, and the reductions of ``relu(tensor)`` from the same pass.

    The second is what `reduce_tensor` of an ``nn.ReLU``'s output would give,
    before `accuracy.repair` (call it with that output). It is None where it
    cannot be had this way: not a float32 CPU tensor the kernel takes, or a
    NaN or Inf in ``tensor`` (the output is then reduced on its own).
    """
    got = native.moments_relu(tensor, shift) if kind_of(tensor) == "float" else None
    if got is None or tensor.numel() == 0:
        return reduce_tensor(tensor, plan, shift), None
    t = tensor.detach()
    red = Reduction("float", t.numel())
    _from_moments(t, got[0], plan, red)
    if not red.known_finite():
        return red, None
    relu = Reduction("float", t.numel())
    _fill(got[1], relu_plan, relu)
    relu.nan = relu.inf = 0.0
    return red, relu


def _native(t: torch.Tensor, plan: Plan, red: Reduction) -> bool:
    """One pass through the C kernel (CPU); False when it cannot take ``t``."""
    got = native.moments(t)
    if got is None:
        return False
    _from_moments(t, got, plan, red)
    return True


def _from_moments(t: torch.Tensor, got: native.Moments, plan: Plan, red: Reduction) -> None:
    """Fill ``red`` from the kernel's results for ``t``; exact NaN/Inf counts where needed."""
    _fill(got, plan, red)
    total, squares = got.shifted_sum, got.shifted_sumsq
    if not (math.isfinite(total) and math.isfinite(squares)):
        # a NaN or Inf, or a sum too large for float32: count them, sum again if finite
        _count_nonfinite(t, red, [total, squares])
        if plan.sum or plan.squares:
            accuracy.repair(t, red)
        return
    red.nan = red.inf = 0.0
    rms = math.sqrt(squares / got.n)  # without the mean (no plan.sum) no digits were lost
    target = accuracy.cancelled(got.n, total, rms, got.shift) if plan.sum and plan.squares else None
    around_zero_already = target == 0.0 and got.shift == 0.0
    if target is not None and not around_zero_already:
        accuracy.repair(t, red)
    red.host = True  # the kernel's results and `repair`'s are host floats


def _fill(got: native.Moments, plan: Plan, red: Reduction) -> None:
    if plan.sum or plan.squares:  # moments of x - shift: the mean is needed to undo it
        red.sum, red.shift = got.shifted_sum, got.shift
    if plan.squares:
        red.sumsq = got.shifted_sumsq
    if plan.extrema:
        red.min, red.max = got.min, got.max
    if plan.zeros != "none":
        red.nonzero = got.nonzero


def _eager(t: torch.Tensor, plan: Plan, red: Reduction) -> None:
    acc = torch.float32 if t.dtype in _LOW_PRECISION else None
    if t.device.type != "cpu" and (plan.sum or plan.squares):
        # Off the CPU the sums cannot be checked without a synchronisation:
        # std_mean keeps std's digits when |mean| >> std (the deviations are
        # summed, not the values), and std stays in range where var may not.
        std, mean = torch.std_mean(t, correction=0)
        wide = _wide(t.device)
        red.shift, red.sum = mean, 0.0
        red.norm = std.to(wide) * math.sqrt(red.numel)
    else:
        if plan.sum:
            red.sum = t.sum(dtype=acc)
        if plan.squares:
            if t.dtype in _DOT and t.is_contiguous():
                flat = t.view(-1)  # BLAS dot: about 2x faster than vector_norm on CPU
                red.sumsq = torch.dot(flat, flat)
            else:
                red.norm = torch.linalg.vector_norm(t, dtype=acc)
    if plan.extrema:
        red.min, red.max = torch.aminmax(t)
    if plan.zeros == "nonneg" and t.dtype in _SAME_SIZE_INT:
        # For values >= 0 a bit pattern is zero exactly when the value is +0.0;
        # counting on the integer view is ~7x faster than on floats.
        red.nonzero = torch.count_nonzero(t.view(_SAME_SIZE_INT[t.dtype]))
    elif plan.zeros != "none":
        red.nonzero = torch.count_nonzero(t)


def _fused(t: torch.Tensor, plan: Plan, red: Reduction) -> bool:
    from hookscope.stats import fused

    if plan.zeros == "none" and not (plan.sum or plan.squares or plan.extrema):
        return False
    if not fused.supports(t):
        return False
    packed = fused.reduce_packed(t, plan.zeros != "none")
    if packed is None:
        return False
    red.packed = packed
    red.packed_fields = fused.FIELDS if plan.zeros != "none" else fused.FIELDS_NO_ZEROS
    _count_nonfinite(t, red, [packed[:4].sum()])
    return True


def _count_nonfinite(
    t: torch.Tensor, red: Reduction, probes: Sequence[torch.Tensor | float]
) -> None:
    """Exact NaN/Inf counts, unless ``probes`` (values that show any NaN/Inf) say none.

    On the host, reading a reduced value is not a device synchronisation; on
    any other device branching would be, so the counts are always taken there.
    """
    if t.device.type == "cpu" and probes and all(math.isfinite(float(p)) for p in probes):
        red.nan = red.inf = 0.0
        return
    red.nan = torch.isnan(t).sum()
    red.inf = torch.isinf(t).sum()


def fetch(reductions: Sequence[Reduction]) -> None:
    """Replace every device value in ``reductions`` by a float, in one transfer per device."""
    groups: dict[tuple[torch.device, torch.dtype], list[tuple[Reduction, str, torch.Tensor]]] = {}
    per_device: dict[torch.device, list[tuple[list[tuple[Reduction, str]], torch.Tensor]]] = {}
    for red in reductions:
        if red.host:
            continue
        red.host = True  # once the transfers below are done
        if red.packed is not None:
            wide = _wide(red.packed.device)
            targets = [(red, name) for name in red.packed_fields]
            per_device.setdefault(red.packed.device, []).append((targets, red.packed.to(wide)))
            red.packed = None
        for name in _FIELDS:
            value = getattr(red, name)
            if isinstance(value, torch.Tensor):
                groups.setdefault((value.device, value.dtype), []).append((red, name, value))
    for (device, _dtype), items in groups.items():
        stacked = torch.stack([value for _, _, value in items]).to(_wide(device))
        per_device.setdefault(device, []).append(([(r, n) for r, n, _ in items], stacked))
    for parts in per_device.values():
        host = torch.cat([stacked for _, stacked in parts]).cpu().tolist()
        slots = [slot for targets, _ in parts for slot in targets]
        for (red, name), value in zip(slots, host, strict=True):
            setattr(red, name, float(value))


def _wide(device: torch.device) -> torch.dtype:
    return torch.float32 if device.type == "mps" else torch.float64


def merge(a: Reduction, b: Reduction) -> Reduction:
    """Combine the fetched reductions of two tensors (a module called twice in a step)."""
    if a.numel == 0 or b.numel == 0:
        return b if a.numel == 0 else a
    out = Reduction(a.kind if a.kind == b.kind else "float", a.numel + b.numel)
    out.host = True  # only floats are combined
    shifted = any(r.shift or r.scale != 1.0 for r in (a, b))
    if not shifted:
        _as_sumsq(a)
        _as_sumsq(b)
    for name in _FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if (name not in _MOMENTS or not shifted) and isinstance(x, float) and isinstance(y, float):
            setattr(out, name, _combine(name, x, y))
    if shifted:
        left, right = _moments_of(a), _moments_of(b)
        if left is not None and right is not None:
            out.sum, out.sumsq, out.shift, out.scale = accuracy.merge_moments(left, right)
    return out


def unshift(red: Reduction) -> None:
    """Rewrite fetched moments as sums of ``x`` itself (no shift, scale 1).

    For adding reductions elementwise (across processes); gives up the digits
    the shift kept when ``|mean| >> std``.
    """
    if not (red.shift or red.scale != 1.0) or red.sum is None:
        return
    got = accuracy.moment_stats(
        red.numel, _float(red.sum), accuracy.rms_of(red), _float(red.shift) or 0.0, red.scale
    )
    red.sum, red.shift, red.scale, red.norm = got["mean"] * red.numel, None, 1.0, None
    if "rms" in got:
        red.sumsq = got["rms"] * got["rms"] * red.numel


def _as_sumsq(red: Reduction) -> None:
    if isinstance(red.norm, float) and red.sumsq is None:
        red.sumsq, red.norm = red.norm * red.norm, None


def _moments_of(red: Reduction) -> accuracy.Moments | None:
    total, rms = _float(red.sum), accuracy.rms_of(red)
    if total is None or rms is None:
        return None
    return red.numel, total / red.numel, rms, _float(red.shift) or 0.0, red.scale


def _combine(name: str, x: float, y: float) -> float:
    if name == "min":
        return x if math.isnan(x) or x <= y else y
    if name == "max":
        return x if math.isnan(x) or x >= y else y
    return x + y


def summarize(red: Reduction) -> dict[str, float]:
    """Statistics (names from `ALL_STATS`) from fetched reductions; ``{}`` when empty.

    Never raises on fetched values: finite input gives finite statistics.
    """
    n = red.numel
    if n == 0 or red.kind == "skip":
        return {}
    out: dict[str, float] = {}
    if red.kind == "bool":
        trues = float(red.sum or 0.0)
        out.update(mean=trues / n, min=float(trues == n), max=float(trues > 0))
        out.update(zero_frac=1.0 - trues / n)
        return out
    values = (
        red.sum,
        red.sumsq,
        red.norm,
        red.shift,
        red.min,
        red.max,
        red.nonzero,
        red.nan,
        red.inf,
    )
    if red.host:  # every field a float or None already: no checks, no conversions
        fields = cast(_HostFields, values)
    else:
        fields = cast(_HostFields, tuple(_float(value) for value in values))
    total, sumsq, norm, shift, low, high, nonzero, nan, inf = fields
    rms = accuracy.rms_from(n, sumsq, norm)
    out.update(accuracy.moment_stats(n, total, rms, shift or 0.0, red.scale))
    if nan:  # as numpy.min: a NaN anywhere makes min and max NaN
        low = high = None if low is None else math.nan
    if low is not None and high is not None:
        out["min"], out["max"] = low, high
        is_nan = math.isnan(low) or math.isnan(high)  # -inf and +inf give inf, not NaN
        out["absmax"] = math.nan if is_nan else max(abs(low), abs(high))
    if nonzero is not None:
        out["zero_frac"] = min(max((n - nonzero) / n, 0.0), 1.0)
    if nan is not None:
        out["nan_count"] = nan
    if inf is not None:
        out["inf_count"] = inf
    return out


def grad_summary(red: Reduction) -> dict[str, float]:
    """The `GRAD_STATS` that `summarize` gives for ``red``, in that order.

    A fetched reduction of host floats with no shift (every gradient row of a
    compiled graph, every parameter gradient the C kernel reduced) takes four
    lines instead of `summarize`'s whole path; the values are the same.
    """
    n, sumsq = red.numel, red.sumsq
    plain = red.host and not red.shift and red.scale == 1.0 and red.kind == "float"
    if plain and n and isinstance(sumsq, float):
        rms = math.sqrt(sumsq / n) if sumsq >= 0 else math.nan
        out = {"norm": rms * math.sqrt(n), "rms": rms}
        if red.nan is not None:
            out["nan_count"] = cast(float, red.nan)
        if red.inf is not None:
            out["inf_count"] = cast(float, red.inf)
        return out
    values = summarize(red)
    return {stat: values[stat] for stat in GRAD_STATS if stat in values}


#: A fetched reduction's fields in `summarize`'s order (`_FIELDS` but ``shift`` fourth).
_HostFields = tuple[
    float | None, float | None, float | None, float | None, float | None,
    float | None, float | None, float | None, float | None,
]  # fmt: skip


def _float(value: Value) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        raise ValueError("summarize() needs fetched reductions; call fetch() first")
    return float(value)
