"""Every error hookscope raises on purpose.

::

    HookscopeError                  base of everything below
    ├── UsageError (ValueError)     a bad option, selector or argument value
    ├── ModelSpecError              MODEL_SPEC cannot be imported or built
    ├── HookError                   a user hook raised (on_error="raise")
    ├── BypassError                 a module's forward ran without its hooks (bypass="raise")
    ├── ForwardError                the model's forward raised while hookscope ran it
    ├── CaptureOverflowError        activation capture exceeded ``max_bytes``
    ├── MissingExtraError (ImportError)  an optional extra is not installed
    ├── DistributedError            a collective that not every rank entered (torch.distributed)
    └── LintError                   the linter cannot run (bad config, unreadable paths)

``HookscopeWarning`` is the base of warnings: ``HookWarning`` (a hook failed
under ``on_error="warn"|"disable"``), ``BypassWarning`` (``bypass="warn"``)
and ``SelectionWarning`` (a session's ``modules=`` matched no module).

The CLI catches ``HookscopeError`` only and maps it to exit code 2 with a
one-line message; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class HookscopeError(Exception):
    """Base class of every error hookscope raises on purpose."""


class UsageError(HookscopeError, ValueError):
    """An option, selector or argument has a value hookscope cannot use."""


class ModelSpecError(HookscopeError):
    """A ``MODEL_SPEC`` (``pkg.mod:fn`` or ``file.py:fn``) cannot be loaded."""


class HookError(HookscopeError):
    """A user hook raised inside a session with ``on_error="raise"``.

    Attributes:
        module_name: qualified name of the module the hook sits on.
        hook_name: qualified name of the hook callable.
        kind: hook kind (``"forward"``, ``"forward_pre"``, ...).
    """

    def __init__(self, message: str, *, module_name: str, hook_name: str, kind: str) -> None:
        super().__init__(message)
        self.module_name = module_name
        self.hook_name = hook_name
        self.kind = kind


class BypassError(HookscopeError):
    """A module's ``forward`` was invoked directly while ``bypass="raise"``."""


class ForwardError(HookscopeError):
    """The model raised while hookscope ran it; the message names what had run."""


class CaptureOverflowError(HookscopeError):
    """An activation capture would exceed its ``max_bytes`` budget."""


class MissingExtraError(HookscopeError, ImportError):
    """An optional dependency is missing; the message says which extra installs it."""


class DistributedError(HookscopeError):
    """A hookscope collective was not entered by every rank in time (see `hookscope.dist`)."""


class LintError(HookscopeError):
    """The linter cannot run: bad configuration or no readable input."""


class HookscopeWarning(UserWarning):
    """Base class of hookscope's warnings."""


class HookWarning(HookscopeWarning):
    """A user hook raised and the session's error policy kept the run going."""


class BypassWarning(HookscopeWarning):
    """A module's ``forward`` ran without going through ``__call__``."""


class SelectionWarning(HookscopeWarning):
    """A session's ``modules=`` selection matched no module: those hooks were not added."""


def require_extra(module: str, extra: str) -> object:
    """Import an optional dependency or raise `MissingExtraError` with an install hint.

    Args:
        module: the module to import, e.g. ``"matplotlib.pyplot"``.
        extra: the hookscope extra that provides it, e.g. ``"plots"``.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{module} is not installed; install it with: pip install 'hookscope[{extra}]'"
        ) from exc
