"""Records of the hooks a session added, and groups of their handles."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.utils.hooks import RemovableHandle

HookKind = Literal["forward", "forward_pre", "backward", "backward_pre", "grad"]


@dataclass(frozen=True)
class HookFailure:
    """An exception a user hook raised under ``on_error="warn"|"disable"``."""

    module: str
    hook: str
    kind: HookKind
    error: BaseException
    traceback: str


@dataclass(eq=False)
class Registration:
    """One hook the session added on one module (or parameter).

    ``count`` counts eager calls. Calls inside a ``torch.compile``d graph are
    counted on the device in ``traced_calls[traced_slot]`` (a Python int
    changed on every call would force a recompile), see `calls`.
    """

    names: tuple[str, ...]
    kind: HookKind
    hook: Callable[..., Any]
    hook_name: str
    target: weakref.ref[Any]
    handle: RemovableHandle | None = None
    count: int = 0
    disabled: bool = False
    warned: bool = False
    traced_calls: torch.Tensor | None = None
    traced_slot: int = 0
    #: The name handed to the hook and shown in its errors (wrapper components
    #: stripped unless the session keeps them); None: `name`.
    shown_name: str | None = None

    @property
    def calls(self) -> int:
        """Every call so far: eager ones plus those inside compiled graphs (reads the device)."""
        if self.traced_calls is None:
            return self.count
        return self.count + int(self.traced_calls[self.traced_slot])

    @property
    def name(self) -> str:
        """Primary qualified name of the hooked module or parameter."""
        return self.names[0]

    @property
    def shown(self) -> str:
        """The name the hook receives: `name` without wrapper components, unless kept."""
        return self.names[0] if self.shown_name is None else self.shown_name

    @property
    def label(self) -> str:
        """``kind:hook`` — how ``fired`` keys this hook."""
        return f"{self.kind}:{self.hook_name}"


class HandleGroup:
    """Handles of the hooks one ``add_*`` call registered; ``remove()`` is idempotent."""

    def __init__(self, registrations: list[Registration]) -> None:
        self.registrations = registrations

    def __len__(self) -> int:
        return len(self.registrations)

    def remove(self) -> None:
        """Remove these hooks now (the session would remove them on exit anyway)."""
        for reg in self.registrations:
            if reg.handle is not None:
                reg.handle.remove()
            reg.disabled = True

    def __enter__(self) -> HandleGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
