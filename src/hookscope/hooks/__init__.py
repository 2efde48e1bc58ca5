"""The only place in hookscope that registers and removes PyTorch hooks."""

from __future__ import annotations

from hookscope.hooks.inventory import HookInfo, HookInventory, list_hooks
from hookscope.hooks.selection import ModuleSelector, SelectedModule, select_modules
from hookscope.hooks.session import (
    HandleGroup,
    HookFailure,
    HookSession,
    Registration,
    session,
)

__all__ = [
    "HandleGroup",
    "HookFailure",
    "HookInfo",
    "HookInventory",
    "HookSession",
    "ModuleSelector",
    "Registration",
    "SelectedModule",
    "list_hooks",
    "select_modules",
    "session",
]
