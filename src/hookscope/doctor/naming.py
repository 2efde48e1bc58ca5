"""The doctor's report under the names of the unwrapped model (see `hookscope.names`).

The run itself watches the wrapped model, whose qualified names carry
``module.`` (DDP), ``_fsdp_wrapped_module.`` (FSDP1), ``_orig_mod.``
(``torch.compile``) or checkpoint-wrapper components; the report gives each
hook's and each bypass's names as the user wrote them, also inside the
explanations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from hookscope.doctor.records import HookRecord
from hookscope.hooks.bypass import BypassRecord
from hookscope.names import CleanNames

#: Hook kinds registered on tensors (parameters, buffers): named like parameters.
_TENSOR_KINDS = frozenset({"tensor_grad", "post_accumulate_grad"})


def clean_hooks(hooks: Sequence[HookRecord], names: CleanNames) -> tuple[HookRecord, ...]:
    """Each record with clean ``module``, ``names`` and explanations."""
    out = []
    for hook in hooks:
        if hook.module == "*":  # a global hook: no module
            out.append(hook)
            continue
        clean = names.param if hook.kind in _TENSOR_KINDS else names.module
        renamed = _renamer(hook.names, clean)
        out.append(
            replace(
                hook,
                module=clean(hook.module),
                names=tuple(dict.fromkeys(map(clean, hook.names))),
                reason=renamed(hook.reason),
                fix=renamed(hook.fix),
            )
        )
    return tuple(out)


def clean_bypasses(records: Sequence[BypassRecord], names: CleanNames) -> tuple[BypassRecord, ...]:
    """Each bypass record with clean ``module`` and ``names``."""
    return tuple(
        replace(
            record,
            module=names.module(record.module),
            names=tuple(dict.fromkeys(map(names.module, record.names))),
        )
        for record in records
    )


def _renamer(raw: Sequence[str], clean: Callable[[str], str]) -> Callable[[str | None], str | None]:
    """Rewrites ``'raw.name'`` as ``'clean.name'`` (the root as "the root module") in a text."""
    pairs = [
        (f"'{name}'", f"'{clean(name)}'" if clean(name) else "the root module") for name in raw
    ]
    pairs = [(old, new) for old, new in pairs if old != new]

    def rename(text: str | None) -> str | None:
        if text is None:
            return None
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return rename
