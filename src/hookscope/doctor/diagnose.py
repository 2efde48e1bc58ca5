"""Why a hook did not fire: from what the run observed to a reason, in words, with a fix.

Pure logic over facts gathered by `hookscope.doctor.core` (no hooks, no I/O).
The order of the checks matters: a module inside TorchScript or compiled code
is explained by that first, a direct ``.forward`` call before "never ran"
(the module did run, just not through ``__call__``), and for backward hooks
the module must have run with grad enabled before "did not reach the loss"
can be the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from torch import nn

from hookscope.doctor.records import HookRecord, ReasonCode
from hookscope.hooks.bypass import BypassRecord
from hookscope.hooks.firing import CountedHook
from hookscope.hooks.probe import ModuleActivity

_FORWARD_KINDS = ("forward", "forward_pre")
_BACKWARD_KINDS = ("backward", "backward_pre")
_TENSOR_KINDS = ("tensor_grad", "post_accumulate_grad")

Reason = tuple[ReasonCode, str, str]


@dataclass
class RunFacts:
    """What the doctor's run observed."""

    activity: dict[int, ModuleActivity]
    bypasses: Sequence[BypassRecord]
    #: id(module) -> ("torchscript" | "compiled", qualified name of the scripted/compiled module)
    contexts: dict[int, tuple[ReasonCode, str]]
    modules: dict[str, nn.Module]
    backward: bool
    #: why the backward pass could not run although requested, else None
    backward_blocked: str | None = None
    by_name: dict[str, list[BypassRecord]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for record in self.bypasses:
            for name in record.names:
                self.by_name.setdefault(name, []).append(record)


def diagnose(entry: CountedHook, facts: RunFacts) -> HookRecord:
    """The record for one counted hook, with a reason when it did not fire."""
    reason: Reason | None = None
    sites: tuple[str, ...] = ()
    if entry.kind in _FORWARD_KINDS or entry.kind in _BACKWARD_KINDS:
        module = entry.owner() if entry.owner is not None else None
        records = facts.by_name.get(entry.names[0], [])
        sites = tuple(r.call_site for r in records)
        if isinstance(module, nn.Module):
            reason = _module_reason(entry, module, records, facts)
    elif entry.kind in _TENSOR_KINDS and entry.count == 0:
        reason = _tensor_reason(entry, facts)
    elif entry.count == 0:
        reason = _global_reason(entry, facts)
    code, text, fix = reason if reason is not None else (None, None, None)
    return HookRecord(
        module=entry.names[0],
        names=entry.names,
        kind=entry.kind,
        hook=entry.hook,
        source=entry.source,
        by_hookscope=entry.by_hookscope,
        fired=entry.count,
        code=code,
        reason=text,
        fix=fix,
        call_sites=sites if code == "forward_called_directly" else (),
    )


def _label(name: str) -> str:
    return f"'{name}'" if name else "the root module"


def _context_reason(entry: CountedHook, module: nn.Module, facts: RunFacts) -> Reason | None:
    context = facts.contexts.get(id(module))
    if context is None or entry.count > 0:
        return None
    kind, where = context
    if kind == "torchscript":
        return (
            "torchscript",
            f"{_label(where)} is a TorchScript module: scripted code calls its submodules "
            "without running Python hooks",
            "register hooks on the Python module before scripting, or hook the eager model",
        )
    return (
        "compiled",
        f"{_label(where)} runs compiled (torch.compile): hooks added after compilation are not "
        "seen by the compiled code",
        "register hooks before calling torch.compile (or call torch._dynamo.reset())",
    )


def _module_reason(
    entry: CountedHook, module: nn.Module, records: list[BypassRecord], facts: RunFacts
) -> Reason | None:
    name = entry.names[0]
    context = _context_reason(entry, module, facts)
    if context is not None:
        return context
    activity = facts.activity.get(id(module), ModuleActivity())
    if records:
        total = sum(r.count for r in records)
        share = f"{total} of {total + entry.count} run(s)"
        return (
            "forward_called_directly",
            f"{_label(name)}.forward was invoked directly ({share}, call sites below); hooks run "
            "only when the module is called: module(x)",
            "; ".join(dict.fromkeys(r.fix for r in records)),
        )
    if entry.count > 0:
        return None
    if activity.calls == 0:
        return (
            "not_executed",
            f"{_label(name)} never executed in this run (unused module, or a branch not taken)",
            "check the condition that selects this module, or hook the module that runs",
        )
    if entry.kind in _BACKWARD_KINDS:
        return _backward_reason(name, activity, facts)
    return (
        "unknown",
        f"{_label(name)} ran {activity.calls} time(s) through __call__ but this hook never fired "
        "(did an earlier hook raise, or was it disabled?)",
        "check the hook's own conditions",
    )


def _backward_reason(name: str, activity: ModuleActivity, facts: RunFacts) -> Reason:
    if not facts.backward:
        return (
            "backward_not_run",
            "backward hooks fire only in a backward pass, and none was run",
            "run the doctor with backward=True (CLI: --backward)",
        )
    if activity.inference_mode == activity.calls:
        return (
            "inference_mode",
            f"{_label(name)} ran under torch.inference_mode(): no graph, so no backward",
            "run it outside inference_mode to get backward hooks",
        )
    if activity.grad_enabled == 0:
        return (
            "grad_disabled",
            f"{_label(name)} ran with gradients disabled (torch.no_grad / set_grad_enabled(False))",
            "run the module with grad enabled (remove the surrounding no_grad)",
        )
    if activity.output_requires_grad == 0:
        return (
            "nothing_requires_grad",
            f"nothing requires grad in {_label(name)}: its inputs and parameters are all frozen",
            "set requires_grad=True on the input or the module's parameters",
        )
    if facts.backward_blocked is not None:
        return ("nothing_requires_grad", facts.backward_blocked, "make the output require grad")
    return (
        "output_not_in_loss",
        f"the output of {_label(name)} never reached the loss that backward ran from",
        "use the module's output in the loss (or detach on purpose and drop the hook)",
    )


def _tensor_reason(entry: CountedHook, facts: RunFacts) -> Reason:
    param = entry.owner() if entry.owner is not None else None
    name = entry.names[0]
    module = facts.modules.get(name.rpartition(".")[0])
    activity = facts.activity.get(id(module), ModuleActivity()) if module is not None else None
    if not facts.backward:
        return (
            "backward_not_run",
            "tensor gradient hooks fire only in a backward pass, and none was run",
            "run the doctor with backward=True (CLI: --backward)",
        )
    if param is not None and not param.requires_grad:
        return (
            "nothing_requires_grad",
            f"parameter '{name}' does not require grad (frozen)",
            "set requires_grad=True on it, or drop the hook",
        )
    if activity is not None and activity.calls == 0:
        return (
            "not_executed",
            f"the module owning '{name}' never executed in this run",
            "check the condition that selects that module",
        )
    if activity is not None and activity.grad_enabled == 0:
        return (
            "grad_disabled",
            f"the module owning '{name}' ran with gradients disabled",
            "run it with grad enabled",
        )
    return (
        "output_not_in_loss",
        f"no gradient reached '{name}' from the loss that backward ran from",
        "use the module's output in the loss",
    )


def _global_reason(entry: CountedHook, facts: RunFacts) -> Reason:
    if entry.kind.startswith("global_backward") and not facts.backward:
        return (
            "backward_not_run",
            "global backward hooks fire only in a backward pass, and none was run",
            "run the doctor with backward=True (CLI: --backward)",
        )
    return (
        "unknown",
        "this global module hook never fired (no module ran through __call__?)",
        "call modules as module(x)",
    )


def replaced_record(
    names: tuple[str, ...],
    kind: str,
    hook: str,
    source: str | None,
    fired: int,
    context: tuple[ReasonCode, str] | None = None,
) -> HookRecord:
    """A session hook on a module that is no longer part of the model.

    ``context`` says when the module now at that name is TorchScript or
    compiled (``model.body = torch.jit.script(model.body)`` after hooking).
    """
    code: ReasonCode = "module_replaced"
    reason = (
        f"the module hooked as {_label(names[0])} was replaced after the hook was registered; "
        "it is no longer part of the model"
    )
    fix = "register the hook after replacing the module (hook the new one)"
    if context is not None and context[0] == "torchscript":
        code = "torchscript"
        reason = (
            f"{_label(names[0])} was replaced by TorchScript ({_label(context[1])} is scripted or "
            "traced) after the hook was registered; the hook stayed on the eager module, and "
            "TorchScript code does not run Python hooks"
        )
        fix = "hook the eager model, or script only after debugging with hooks"
    elif context is not None:
        code = "compiled"
        reason = (
            f"{_label(names[0])} was replaced by a compiled module ({_label(context[1])}) after "
            "the hook was registered; the hook stayed on the original module"
        )
        fix = "register hooks on the module before compiling it"
    return HookRecord(
        module=names[0],
        names=names,
        kind=kind,
        hook=hook,
        source=source,
        by_hookscope=True,
        fired=fired,
        code=code,
        reason=reason,
        fix=fix,
    )
