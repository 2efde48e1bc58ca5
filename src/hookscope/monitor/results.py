"""Turning a step's fetched entries into named statistics, tensor infos and the NaN origin.

A module called several times in one step (a shared ReLU, a weight-tied
layer) gets one set of statistics per tensor path, merged over its calls:
sums, counts, min and max combine exactly. Parameter gradients keep the last
value (the accumulated ``.grad``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import torch

from hookscope.monitor.entries import Entry
from hookscope.monitor.records import NonFinite, Phase, TensorInfo, note_for
from hookscope.names import clean_param_name
from hookscope.stats import Reduction, grad_summary, merge, summarize

#: ``(phase, module, tensor path)``: what one set of statistics describes.
Key = tuple[Phase, str, str]
#: What a `TensorInfo` is made from: the key, the shape and the dtype.
InfoKey = tuple[Key, tuple[int, ...], torch.dtype]

#: `merge_entries` keeps at most this many `TensorInfo` objects between calls.
KNOWN_INFOS = 4096


def merge_entries(
    entries: Sequence[Entry], known: dict[InfoKey, TensorInfo] | None = None
) -> tuple[dict[Key, Reduction], list[TensorInfo]]:
    """One merged reduction per reported ``(phase, module, tensor)``, and their shapes.

    Args:
        entries: fetched entries in execution order.
        known: `TensorInfo` objects made in earlier calls, filled in here (a
            Monitor keeps one: the same tensors come back every step, and an
            info is immutable). Cleared when it grows past `KNOWN_INFOS`.
    """
    merged: dict[Key, Reduction] = {}
    infos: dict[Key, TensorInfo] = {}
    memo: dict[InfoKey, TensorInfo] = {} if known is None else known
    if len(memo) > KNOWN_INFOS:  # shapes that change every step
        memo.clear()
    for entry in entries:
        for module, path, shown in entry.roles:
            if not shown:
                continue
            key: Key = (entry.phase, module, path)
            previous = merged.get(key)
            if previous is None or entry.phase == "param":
                merged[key] = entry.red
            else:
                merged[key] = merge(previous, entry.red)
            if key not in infos:
                info_key = (key, entry.shape, entry.dtype)
                info = memo.get(info_key)
                if info is None:
                    dtype = str(entry.dtype).removeprefix("torch.")
                    note = note_for(entry.shape, dtype)
                    info = memo[info_key] = TensorInfo(*key, entry.shape, dtype, note)
                infos[key] = info
    return merged, list(infos.values())


def summaries(
    merged: dict[Key, Reduction], activation_stats: Collection[str]
) -> dict[Key, dict[str, float]]:
    """The named statistics of each merged reduction, ``{key: {stat: value}}`` in stat order.

    ``activation_stats`` for the ``forward`` phase, `GRAD_STATS` for the others.
    """
    found = {}
    for key, red in merged.items():
        if key[0] != "forward":
            found[key] = grad_summary(red)
            continue
        values = summarize(red)
        found[key] = {stat: values[stat] for stat in activation_stats if stat in values}
    return found


def find_nonfinite(step: int, entries: Sequence[Entry]) -> NonFinite | None:
    """The first module whose inputs were finite and whose result was not.

    Entries are in execution order. In the forward, the first non-finite
    tensor is either a module's output (that module made it) or an input check
    (it came from outside the monitored modules). In the backward, a gradient
    hook can serve several roles; an input role means the module's own
    backward produced the non-finite gradient and is preferred. A parameter
    gradient comes last: under DDP a NaN made on another rank reaches this
    rank only through the all-reduced gradients.
    """
    for phase in ("forward", "backward", "param"):
        for entry in entries:
            if entry.phase != phase or not entry.red.nonfinite():
                continue
            roles = entry.roles
            if phase == "backward":
                inputs = [role for role in roles if role[1].startswith("input")]
                roles = inputs or roles
            module, path, _shown = roles[0]
            return NonFinite(step, phase, module, path)
    return None


def clean_keys(
    merged: dict[Key, Reduction],
    infos: Sequence[TensorInfo],
    first: NonFinite | None,
    names: dict[str, str],
    memo: dict[tuple[Phase, str], str] | None = None,
) -> tuple[dict[Key, Reduction], list[TensorInfo], NonFinite | None]:
    """Names without wrapper components (``module.``, ``_fsdp_wrapped_module.``, ...).

    Args:
        names: `hookscope.names.clean_names` of the model; empty keeps names as they are.
        memo: clean names found in earlier calls with the same ``names``, filled in
            here (a Monitor keeps one: the same names come back every step).
    """
    if not names:
        return merged, list(infos), first
    known = {} if memo is None else memo

    def clean(phase: Phase, name: str) -> str:
        found = known.get((phase, name))
        if found is None:
            found = clean_param_name(name, names) if phase == "param" else names.get(name, name)
            known[(phase, name)] = found
        return found

    merged = {
        (phase, clean(phase, module), path): red for (phase, module, path), red in merged.items()
    }
    infos = [
        info
        if (name := clean(info.phase, info.module)) == info.module
        else replace(info, module=name)
        for info in infos
    ]
    if first is not None:
        first = replace(first, module=clean(first.phase, first.module))
    return merged, infos, first
