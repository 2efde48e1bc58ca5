"""The doctor's records: one per hook, and what a run found (`DoctorFindings`).

`hookscope.doctor.render` reads these; `hookscope.doctor.report.DoctorReport`
adds the renderings on top, so the records never import them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from hookscope.hooks.bypass import BypassRecord

#: Why a hook did not fire (``None`` in `HookRecord.code` when it fired normally).
ReasonCode = Literal[
    "forward_called_directly",
    "not_executed",
    "module_replaced",
    "backward_not_run",
    "grad_disabled",
    "inference_mode",
    "nothing_requires_grad",
    "output_not_in_loss",
    "torchscript",
    "compiled",
    "unknown",
]


@dataclass(frozen=True)
class HookRecord:
    """One hook found on the model (or on a module a session hooked and that was replaced).

    Attributes:
        module: primary qualified name of the module (``""`` is the root, ``"*"``
            a global module hook); for tensor hooks, the parameter's name.
        names: every qualified name of that module or tensor.
        kind: ``forward``, ``forward_pre``, ``backward``, ``backward_pre``,
            ``tensor_grad``, ``post_accumulate_grad`` or ``global_*``.
        hook: the hook callable's qualified name.
        source: ``file:line`` where the hook is defined, or None.
        by_hookscope: True when a hookscope session registered it.
        fired: how often it fired during the doctor's run.
        code: why it did not fire (or was skipped some of the time), else None.
        reason: the explanation in words, else None.
        fix: what to change, else None.
        call_sites: for ``forward_called_directly``, the ``file:line`` of each call.
    """

    module: str
    names: tuple[str, ...]
    kind: str
    hook: str
    source: str | None
    by_hookscope: bool
    fired: int
    code: ReasonCode | None = None
    reason: str | None = None
    fix: str | None = None
    call_sites: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for JSON)."""
        data = asdict(self)
        data["names"] = list(self.names)
        data["call_sites"] = list(self.call_sites)
        return data


@dataclass(frozen=True)
class DoctorFindings:
    """What `hookscope.doctor` found (`DoctorReport` without its renderings).

    Attributes:
        model: the model's class name.
        hooks: every hook, in module order; those that did not fire carry a reason.
        bypasses: each module whose ``forward`` ran without ``__call__``, per call site.
        backward: whether a backward pass was requested.
        modules_executed: how many modules ran at least once.
        modules_total: how many modules the model has.
    """

    model: str
    hooks: tuple[HookRecord, ...]
    bypasses: tuple[BypassRecord, ...]
    backward: bool
    modules_executed: int
    modules_total: int

    @property
    def problems(self) -> tuple[HookRecord, ...]:
        """Hooks that did not fire, or were skipped some of the time."""
        return tuple(h for h in self.hooks if h.code is not None)

    @property
    def ok(self) -> bool:
        """True when every hook fired and no forward was invoked directly."""
        return not self.problems and not self.bypasses

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable data."""
        return {
            "model": self.model,
            "ok": self.ok,
            "backward": self.backward,
            "modules_executed": self.modules_executed,
            "modules_total": self.modules_total,
            "hooks": [h.to_dict() for h in self.hooks],
            "bypasses": [b.to_dict() for b in self.bypasses],
        }
