"""What happens when a session's hook runs: counting, the module's name, the error policy.

Every user hook runs inside a small closure (`HookRunner.wrap`) that counts
its firings, passes the module's qualified name first, and applies the
session's ``on_error`` policy when it raises: ``"raise"`` a `HookError`,
``"warn"`` (warn once per hook, record, go on as if it returned None) or
``"disable"`` (like ``"warn"``, and remove the hook).
"""

from __future__ import annotations

import threading
import traceback
import warnings
from collections.abc import Callable
from typing import Any, Literal, get_args

from hookscope.errors import HookError, HookWarning
from hookscope.hooks.compiled import tracing
from hookscope.hooks.describe import WRAPPED_ATTR
from hookscope.hooks.handles import HookFailure, Registration

OnError = Literal["raise", "warn", "disable"]
ON_ERROR = get_args(OnError)


#: Failures a session keeps in ``errors`` (the first ones): a hook that fails at
#: every call of a long run under ``on_error="warn"`` must not grow memory.
ERRORS_KEPT = 1000


class HookRunner:
    """Runs a session's hooks under its ``on_error`` policy; ``errors`` lists what they raised.

    ``errors`` keeps the first `ERRORS_KEPT` failures; ``errors_dropped`` counts the rest.
    """

    def __init__(self, on_error: OnError) -> None:
        self.on_error: OnError = on_error
        self.errors: list[HookFailure] = []
        self.errors_dropped = 0
        #: held around every ``Registration.count`` change
        self.lock = threading.Lock()

    def wrap(self, reg: Registration) -> Callable[..., Any]:
        """The callable to register for ``reg``: ``wrapper(*args)`` calls ``reg.hook(name, *args)``."""
        hook = reg.hook
        name = reg.shown
        lock = self.lock

        def wrapper(*args: Any) -> Any:
            if reg.disabled:
                return None
            if tracing():
                # traced into a compiled graph: no lock, and the count on the device
                if reg.traced_calls is not None:
                    reg.traced_calls[reg.traced_slot] += 1
                return hook(name, *args)
            with lock:
                reg.count += 1
            try:
                return hook(name, *args)
            except Exception as exc:
                self.failed(reg, exc)
                return None

        setattr(wrapper, WRAPPED_ATTR, hook)
        wrapper.__qualname__ = f"hookscope[{reg.hook_name}]"
        return wrapper

    def count(self, reg: Registration) -> None:
        """Count one firing of ``reg`` (thread-safe)."""
        with self.lock:
            reg.count += 1

    def failed(self, reg: Registration, exc: Exception) -> None:
        """Apply the ``on_error`` policy to ``exc`` raised by ``reg``'s hook."""
        where = f"{reg.kind} hook {reg.hook_name} on module '{reg.shown}'"
        if reg.kind == "grad":
            where = f"grad hook {reg.hook_name} on parameter '{reg.shown}'"
        if self.on_error == "raise":
            raise HookError(
                f"{where} raised {type(exc).__name__}: {exc}",
                module_name=reg.shown,
                hook_name=reg.hook_name,
                kind=reg.kind,
            ) from exc
        with self.lock:
            if len(self.errors) < ERRORS_KEPT:
                text = traceback.format_exc()
                self.errors.append(HookFailure(reg.shown, reg.hook_name, reg.kind, exc, text))
            else:
                self.errors_dropped += 1
            first = not reg.warned
            reg.warned = True
        if self.on_error == "disable":
            reg.disabled = True
            if reg.handle is not None:
                reg.handle.remove()
        if first:
            action = "disabled for the rest of the session" if reg.disabled else "ignored"
            warnings.warn(
                f"{where} raised {type(exc).__name__}: {exc} ({action}; see session.errors)",
                HookWarning,
                stacklevel=2,
            )
