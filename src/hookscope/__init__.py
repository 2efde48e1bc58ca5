"""hookscope: trustworthy PyTorch hooks.

Scoped hook sessions, a doctor for hooks that silently do not fire, model
summaries with exact parameters and dispatch-level MACs, activation and
gradient monitoring, pictures, and a linter for hook-bypassing calls.

The public names are imported on first use, so ``hookscope lint`` and
``hookscope --version`` start without importing torch (about 2 s of CPU).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from hookscope.errors import (
    BypassError,
    BypassWarning,
    HookError,
    HookscopeError,
    HookscopeWarning,
    HookWarning,
    UsageError,
)

if TYPE_CHECKING:
    from hookscope.compare import Comparison, compare, record
    from hookscope.doctor import doctor
    from hookscope.hooks import HookInfo, HookSession, list_hooks, session
    from hookscope.hooks.capture import capture
    from hookscope.lint import lint
    from hookscope.monitor import Monitor
    from hookscope.summary import ModelSummary, summary

__version__ = "0.2.0"

__all__ = [
    "BypassError",
    "BypassWarning",
    "Comparison",
    "HookError",
    "HookInfo",
    "HookSession",
    "HookWarning",
    "HookscopeError",
    "HookscopeWarning",
    "ModelSummary",
    "Monitor",
    "UsageError",
    "__version__",
    "capture",
    "compare",
    "doctor",
    "lint",
    "list_hooks",
    "record",
    "session",
    "summary",
]

#: public name -> module that defines it
_LAZY = {
    "Comparison": "hookscope.compare",
    "HookInfo": "hookscope.hooks",
    "HookSession": "hookscope.hooks",
    "ModelSummary": "hookscope.summary",
    "Monitor": "hookscope.monitor",
    "capture": "hookscope.hooks.capture",
    "compare": "hookscope.compare",
    "doctor": "hookscope.doctor",
    "lint": "hookscope.lint",
    "list_hooks": "hookscope.hooks",
    "record": "hookscope.compare",
    "session": "hookscope.hooks",
    "summary": "hookscope.summary",
}


class _Facade(types.ModuleType):
    """The package module: loads public names lazily.

    ``compare``, ``doctor``, ``lint`` and ``summary`` are both functions and subpackages.
    Importing a subpackage makes Python bind it as an attribute of this
    package; that binding is refused so the name keeps meaning the function
    (the subpackage stays reachable through ``sys.modules`` and ``from ... import``).
    """

    def __getattr__(self, name: str) -> Any:
        target = _LAZY.get(name)
        if target is None:
            raise AttributeError(f"module 'hookscope' has no attribute {name!r}")
        value = getattr(importlib.import_module(target), name)
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *__all__})


sys.modules[__name__].__class__ = _Facade
