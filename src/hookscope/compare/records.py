"""Records of a comparison: per-tensor errors, per-call rows, `ComparisonData`.

`hookscope.compare.format` reads these; `hookscope.compare.result.Comparison`
(what `hookscope.compare` returns) adds the renderings on top, so the records
never import them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from hookscope.compare.metrics import Metrics

Mode = Literal["propagate", "isolate"]
TensorKind = Literal["output", "grad"]


@dataclass(frozen=True)
class TensorDiff:
    """One tensor of one call on both sides.

    Attributes:
        kind: ``"output"`` or ``"grad"`` (gradient w.r.t. that output).
        path: where the tensor sits in the output (``""``, ``"0"``, ``"logits"``).
        shape: shape on side A.
        dtype_a: dtype on side A (``"float32"``).
        dtype_b: dtype on side B.
        metrics: the errors, or None when they cannot be computed (see ``note``).
        note: why ``metrics`` is None (missing on one side, shapes differ).
    """

    kind: TensorKind
    path: str
    shape: tuple[int, ...]
    dtype_a: str
    dtype_b: str
    metrics: Metrics | None
    note: str = ""


@dataclass(frozen=True)
class Row:
    """One module call: its errors, worst over its tensors.

    Attributes:
        index: position in A's completion order (a module after its children).
        name: qualified name without wrapper prefixes (``""`` is the root).
        call: which call of this module, from 0.
        type: the module's class name.
        name_b: B's name for it when matching paired different names.
        tensors: one `TensorDiff` per output (and gradient) tensor.
        isolated: B's module ran on A's inputs (isolate mode).
    """

    index: int
    name: str
    call: int
    type: str
    name_b: str
    tensors: tuple[TensorDiff, ...]
    isolated: bool

    @property
    def label(self) -> str:
        """``name`` (``(root)`` for the root) with ``#call`` after the first call."""
        base = self.name or "(root)"
        return base if self.call == 0 else f"{base}#{self.call}"

    @property
    def depth(self) -> int:
        """Nesting depth of the module (the root is 0)."""
        return 0 if not self.name else self.name.count(".") + 1

    def _values(self, field: str) -> list[float]:
        return [getattr(t.metrics, field) for t in self.tensors if t.metrics is not None]

    @property
    def max_abs(self) -> float:
        """Largest absolute error over the row's tensors (0 without any)."""
        return max(self._values("max_abs"), default=0.0)

    @property
    def max_rel(self) -> float:
        """Largest relative error over the row's tensors."""
        return max(self._values("max_rel"), default=0.0)

    @property
    def sqnr_db(self) -> float:
        """Lowest SQNR (dB) over the row's tensors; ``inf`` when all match exactly."""
        return min(self._values("sqnr_db"), default=math.inf)

    @property
    def cosine(self) -> float:
        """Lowest cosine similarity over the row's tensors."""
        return min(self._values("cosine"), default=1.0)

    @property
    def frac_outside(self) -> float:
        """Largest fraction of elements outside ``rtol``/``atol`` over the row's tensors."""
        return max(self._values("frac_outside"), default=0.0)

    @property
    def exceeds(self) -> bool:
        """True when some element of some tensor lies outside the tolerance."""
        return self.frac_outside > 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary with the per-tensor details."""
        return {
            "index": self.index,
            "module": self.label,
            "name": self.name,
            "call": self.call,
            "type": self.type,
            "name_b": self.name_b,
            "isolated": self.isolated,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "sqnr_db": self.sqnr_db,
            "cosine": self.cosine,
            "frac_outside": self.frac_outside,
            "exceeds": self.exceeds,
            "tensors": [
                {**asdict(t), "shape": list(t.shape), "metrics": _metrics(t.metrics)}
                for t in self.tensors
            ],
        }


def _metrics(metrics: Metrics | None) -> dict[str, Any] | None:
    return None if metrics is None else asdict(metrics)


@dataclass(frozen=True)
class ComparisonData:
    """One `Row` per matched module call, in execution order (`Comparison` without renderings).

    Attributes:
        mode: ``"propagate"`` (B ran on its own) or ``"isolate"`` (each module
            of B was fed A's inputs, so a row's error is that module's own).
        rows: matched calls in A's completion order.
        unmatched_a: calls of A with no partner in B (labels).
        unmatched_b: calls of B with no partner in A (labels).
        rtol: relative tolerance of ``frac_outside`` / ``exceeds``.
        atol: absolute tolerance.
        label_a: what side A was (``"GPT2LMHeadModel"``, a file name).
        label_b: what side B was (``"torch.bfloat16 autocast"``, ...).
    """

    mode: Mode
    rows: tuple[Row, ...]
    unmatched_a: tuple[str, ...]
    unmatched_b: tuple[str, ...]
    rtol: float
    atol: float
    label_a: str
    label_b: str

    @property
    def culprit(self) -> Row | None:
        """The first row (in execution order) outside the tolerance, or None.

        In isolate mode this is the module that *introduces* the error; in
        propagate mode it is where the difference first shows.
        """
        return next((row for row in self.rows if row.exceeds), None)

    @property
    def exceeded(self) -> tuple[Row, ...]:
        """Every row outside the tolerance."""
        return tuple(row for row in self.rows if row.exceeds)

    def worst(self, n: int = 5) -> list[Row]:
        """The ``n`` rows with the lowest SQNR (ties: larger max abs error first)."""
        return sorted(self.rows, key=lambda r: (r.sqnr_db, -r.max_abs, r.index))[:n]

    def row(self, name: str, call: int = 0) -> Row:
        """The row of module ``name`` (clean name; ``""`` the root), call ``call``.

        Raises:
            KeyError: no such row (the message lists a few names).
        """
        for row in self.rows:
            if row.name == name and row.call == call:
                return row
        shown = ", ".join(r.label for r in self.rows[:6])
        raise KeyError(f"no row for {name!r} call {call} (rows: {shown}, ...)")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``--format json`` prints)."""
        culprit = self.culprit
        return {
            "mode": self.mode,
            "a": self.label_a,
            "b": self.label_b,
            "rtol": self.rtol,
            "atol": self.atol,
            "culprit": None if culprit is None else culprit.label,
            "exceeded": len(self.exceeded),
            "rows": [row.to_dict() for row in self.rows],
            "unmatched_a": list(self.unmatched_a),
            "unmatched_b": list(self.unmatched_b),
        }
