"""hookscope: trustworthy PyTorch hooks.

Scoped hook sessions, a doctor for hooks that silently do not fire, model
summaries with exact parameters and dispatch-level MACs, activation and
gradient monitoring, pictures, and a linter for hook-bypassing calls.
"""

from __future__ import annotations

from hookscope.doctor import doctor
from hookscope.errors import (
    BypassError,
    BypassWarning,
    HookError,
    HookscopeError,
    HookscopeWarning,
    HookWarning,
    UsageError,
)
from hookscope.hooks import HookInfo, HookSession, list_hooks, session
from hookscope.hooks.capture import capture
from hookscope.lint import lint
from hookscope.monitor import Monitor
from hookscope.summary import ModelSummary, summary

__version__ = "0.1.0"

__all__ = [
    "BypassError",
    "BypassWarning",
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
    "doctor",
    "lint",
    "list_hooks",
    "session",
    "summary",
]
