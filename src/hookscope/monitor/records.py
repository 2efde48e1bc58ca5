"""What a monitor produces: frozen records of statistics, alerts and the first NaN/Inf."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from hookscope.monitor.tables import step_html

Phase = Literal["forward", "backward", "param"]
#: What a step can miss (`StepResult.missing`): a phase, or ``"inputs"`` (the
#: ``inputs=True`` statistics of modules that ran inside a compiled graph).
Missing = Literal["forward", "inputs", "backward", "param"]
Rule = Literal["exploding", "vanishing", "dead", "nonfinite"]


@dataclass(frozen=True, slots=True)
class Record:
    """One statistic of one tensor at one step.

    Attributes:
        phase: ``"forward"`` (activations), ``"backward"`` (gradient w.r.t. a
            module's output, or input with ``inputs=True``) or ``"param"``
            (parameter gradient; ``module`` is the parameter's qualified name).
        module: qualified module (or parameter) name.
        tensor: path of the tensor, e.g. ``"output"``, ``"output[0]"``,
            ``"output.logits"``, ``"input[0]"``; ``"grad"`` for parameters.
        stat: statistic name (``mean``, ``std``, ``norm``, ...).
        value: the value; NaN or Inf when the tensor held them.
    """

    phase: Phase
    module: str
    tensor: str
    stat: str
    value: float


def records_from(
    found: Mapping[tuple[Phase, str, str], Mapping[str, float]],
) -> list[Record]:
    """One `Record` per ``(phase, module, tensor) -> {stat: value}`` entry, in order.

    A Monitor makes ~10 records per tensor every step. The fields are set
    through the slot descriptors, as the frozen dataclass's ``__init__`` sets
    them through ``object.__setattr__`` but without its per-field look-ups:
    about 0.25 instead of 0.45 µs a record (~30 µs of a compiled SmallCNN's
    ``mon.step()``). The records are plain `Record` objects (a test holds
    them equal to constructed ones); `Record` has no ``__post_init__`` to skip.
    """
    new, cls = object.__new__, Record
    phase, module, tensor, stat, value = (vars(Record)[f].__set__ for f in Record.__slots__)
    out = []
    for (ph, mod, path), values in found.items():
        for name, v in values.items():
            rec = new(cls)
            phase(rec, ph)
            module(rec, mod)
            tensor(rec, path)
            stat(rec, name)
            value(rec, v)
            out.append(rec)
    return out


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """Shape and dtype of a monitored tensor (its first call in the step).

    ``note`` says when the tensor's records are not plain statistics of its
    values: ``"empty: no statistics"`` (0 elements) or ``"complex:
    statistics of |z|"`` (a complex tensor is summarised by its magnitude;
    the Monitor also warns once). ``""`` otherwise.
    """

    phase: Phase
    module: str
    tensor: str
    shape: tuple[int, ...]
    dtype: str
    note: str = ""


def note_for(shape: tuple[int, ...], dtype: str) -> str:
    """`TensorInfo.note` of a tensor of ``shape`` and ``dtype``."""
    if 0 in shape:
        return "empty: no statistics"
    if dtype.startswith("complex"):
        return "complex: statistics of |z|"
    return ""


@dataclass(frozen=True, slots=True)
class Alert:
    """A threshold rule that fired.

    Attributes:
        step: the step it fired at.
        module: qualified module (or parameter) name.
        tensor: tensor path (as in `Record`).
        value: the value that broke the rule (for ``nonfinite``: NaN + Inf count).
        rule: ``"exploding"``, ``"vanishing"``, ``"dead"`` or ``"nonfinite"``.
        phase: the phase of the tensor (an addition to the five agreed fields).
    """

    step: int
    module: str
    tensor: str
    value: float
    rule: Rule
    phase: Phase = "forward"


@dataclass(frozen=True, slots=True)
class NonFinite:
    """Where the first NaN/Inf appeared: the first module, in execution order,
    whose inputs were finite and whose output (forward) or input gradient
    (backward) was not.

    ``tensor`` is the path of the first non-finite tensor: in the forward an
    output path (or ``input[i]`` when the value came from outside the monitored
    modules, e.g. the model input or a functional op); in the backward
    ``input[i]`` (the module's backward produced it) or an output path (the
    gradient arrived non-finite from unmonitored code such as the loss).
    ``rank`` is the rank that saw it (0 outside torch.distributed; with
    ``Monitor(ranks="reduce")`` every rank reports the same, see
    `hookscope.monitor.ranks`).
    """

    step: int
    phase: Phase
    module: str
    tensor: str
    rank: int = 0


@dataclass(frozen=True)
class StepResult:
    """Everything recorded at one step; what sinks receive.

    ``missing`` names the phases the Monitor hooked but whose hooks did not
    run in this step although a later phase ran (e.g. ``("forward",
    "backward")`` for a compiled graph traced before the Monitor was opened),
    and ``"inputs"`` when ``inputs=True`` statistics were not taken because
    modules ran inside a compiled graph (they are eager-only); a warning says
    why once per Monitor.
    ``rank`` and ``world_size`` say where the records were taken (0 and 1
    outside torch.distributed); ``ranks`` is ``"local"`` (this rank's tensors)
    or ``"reduce"`` (all ranks' tensors combined: the same records on every rank).

    ``sentinel`` is True for a step the Monitor did not record (``every``)
    but whose NaN/Inf check found a non-finite tensor: its ``records`` are
    only the ``nan_count`` and ``inf_count`` of the non-finite tensors, and
    ``ranks`` is ``"local"`` (see `hookscope.monitor.sentinel`).

    A Monitor makes ``records`` on first read (`StepResult.of`): a training
    loop that never reads them, or reads them later (``to_pandas``), does not
    pay for ~10 objects per tensor at every step.
    """

    step: int
    records: tuple[Record, ...]
    alerts: tuple[Alert, ...]
    first_nonfinite: NonFinite | None
    tensors: tuple[TensorInfo, ...] = ()
    rank: int = 0
    world_size: int = 1
    ranks: str = "local"
    missing: tuple[Missing, ...] = ()
    sentinel: bool = False

    @classmethod
    def of(
        cls,
        found: Mapping[tuple[Phase, str, str], Mapping[str, float]],
        extra: Sequence[Record] = (),
        **fields: Any,
    ) -> StepResult:
        """A result whose ``records`` are `records_from` ``found``, then ``extra``, made on first read.

        Args:
            found: ``(phase, module, tensor) -> {stat: value}``; not changed afterwards.
            extra: records that follow (e.g. update ratios).
            **fields: every other field.
        """
        result = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(result, name, value)
        object.__setattr__(result, "_found", (found, tuple(extra)))
        return result

    def __getattr__(self, name: str) -> Any:
        # Python calls this only for attributes not set: ``records`` of `of` before its first read.
        found = self.__dict__.get("_found")
        if name != "records" or found is None:
            raise AttributeError(name)
        records = tuple(records_from(found[0])) + found[1]
        object.__setattr__(self, "records", records)
        del self.__dict__["_found"]
        return records

    def __repr__(self) -> str:
        first = self.first_nonfinite
        where = "no NaN/Inf" if first is None else f"first NaN/Inf in {first.module or '(root)'}"
        return (
            f"<StepResult step {self.step}: {len(self.records)} records of "
            f"{len(self.tensors)} tensors, {len(self.alerts)} alert(s), {where}>"
        )

    def _repr_html_(self) -> str:
        return step_html(asdict(self))
