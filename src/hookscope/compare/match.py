"""Pairing the calls of two recordings and turning each pair into a `Row`.

Three ways to pair (``match=``):

* ``"name"``: the same qualified name (wrapper prefixes already stripped by the
  recorder) and the same call number; a module called three times is
  matched call by call.
* ``"order"``: the n-th call started in A with the n-th started in B.
* a mapping ``{name in B: name in A}``: renamed modules; names it does not
  mention are matched by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Literal

from hookscope.compare.metrics import MetricsBatch
from hookscope.compare.recording import CallRecord, Recording, Tensors
from hookscope.compare.records import Row, TensorDiff, TensorKind
from hookscope.errors import UsageError

Match = Literal["name", "order"] | Mapping[str, str]


def check_match(match: object) -> Match:
    """Validate ``match=`` once; raises `UsageError` showing the bad value."""
    if match == "name" or match == "order":
        return match
    if isinstance(match, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in match.items()
    ):
        return match
    raise UsageError(
        f"match must be 'name', 'order' or a dict {{name in B: name in A}}, got {match!r}"
    )


class Matcher:
    """Finds A's call for a call of B, by the chosen rule."""

    def __init__(self, a: Recording, match: Match) -> None:
        self.match = match
        self.by_key = {(c.name, c.call): c for c in a.calls}
        self.by_start = {c.start: c for c in a.calls}

    def partner(self, name_b: str, call: int, start: int) -> CallRecord | None:
        """A's call paired with B's call ``name_b``/``call`` (started ``start``-th)."""
        if self.match == "order":
            return self.by_start.get(start)
        name = self.match.get(name_b, name_b) if isinstance(self.match, Mapping) else name_b
        return self.by_key.get((name, call))


def rows(
    a: Recording,
    b: Recording,
    match: Match,
    *,
    rtol: float,
    atol: float,
    isolated: set[int] | None = None,
) -> tuple[tuple[Row, ...], tuple[str, ...], tuple[str, ...]]:
    """Rows in A's completion order, and the labels of unmatched calls of A and of B.

    ``isolated`` holds ``id()`` of B's calls that ran on A's inputs.
    """
    matcher = Matcher(a, match)
    pairs: dict[int, CallRecord] = {}
    unmatched_b: list[str] = []
    for mine in b.calls:
        theirs = matcher.partner(mine.name, mine.call, mine.start)
        if theirs is None or id(theirs) in pairs:
            unmatched_b.append(mine.label)
        else:
            pairs[id(theirs)] = mine
    batch = MetricsBatch(rtol=rtol, atol=atol)
    queued: dict[tuple[int, int], int] = {}  # one copy shared by a container and its last child
    pending: list[tuple[CallRecord, CallRecord, list[_Pending]]] = []
    unmatched_a: list[str] = []
    for call_a in a.calls:
        call_b = pairs.get(id(call_a))
        if call_b is None:
            unmatched_a.append(call_a.label)
            continue
        tensors = _pending("output", call_a.outputs, call_b.outputs, batch, queued)
        tensors += _pending("grad", call_a.grads, call_b.grads, batch, queued)
        pending.append((call_a, call_b, tensors))
    results = batch.results()
    out = [
        Row(
            index=index,
            name=call_a.name,
            call=call_a.call,
            type=call_a.type or call_b.type,
            name_b=call_b.name if call_b.name != call_a.name else "",
            tensors=tuple(
                replace(diff, metrics=results[slot]) if slot is not None else diff
                for diff, slot in tensors
            ),
            isolated=isolated is not None and id(call_b) in isolated,
        )
        for index, (call_a, call_b, tensors) in enumerate(pending)
    ]
    return tuple(out), tuple(unmatched_a), tuple(unmatched_b)


def _dtype(tensor: object) -> str:
    return str(getattr(tensor, "dtype", "")).removeprefix("torch.")


#: A `TensorDiff` without its metrics yet, and its slot in the `MetricsBatch` (None: no metrics).
_Pending = tuple[TensorDiff, int | None]


def _pending(
    kind: TensorKind,
    a: Tensors,
    b: Tensors,
    batch: MetricsBatch,
    queued: dict[tuple[int, int], int],
) -> list[_Pending]:
    out: list[_Pending] = []
    for path in dict.fromkeys([*a, *b]):
        ta, tb = a.get(path), b.get(path)
        if ta is None or tb is None:
            present = ta if ta is not None else tb
            side = "B" if ta is not None else "A"
            shape = tuple(present.shape) if present is not None else ()
            diff = TensorDiff(kind, path, shape, _dtype(ta), _dtype(tb), None, f"missing in {side}")
            out.append((diff, None))
        elif ta.shape != tb.shape:
            note = f"shape differs: {tuple(ta.shape)} vs {tuple(tb.shape)}"
            diff = TensorDiff(kind, path, tuple(ta.shape), _dtype(ta), _dtype(tb), None, note)
            out.append((diff, None))
        else:
            key = (id(ta), id(tb))
            if key not in queued:
                queued[key] = batch.add(ta, tb)
            diff = TensorDiff(kind, path, tuple(ta.shape), _dtype(ta), _dtype(tb), None)
            out.append((diff, queued[key]))
    return out
