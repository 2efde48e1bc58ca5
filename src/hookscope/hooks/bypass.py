"""Runtime detection of ``module.forward(x)`` calls that skip the module's hooks.

`BypassDetector` watches modules through the class-level probe in
`hookscope.hooks.probe` (no trace on instances) and keeps one record per
module and call site. Not flagged: ``super().forward(x)`` inside a subclass's
``forward``, shared modules, recursion, modules called from inside hooks,
containers and ``torch.utils.checkpoint`` recomputation (all go through
``__call__``); wrappers that libraries put around ``forward`` and that run
inside the module's own call (transformers' ``GradientCheckpointingLayer``,
accelerate's mixed-precision wrappers); and forwards re-run inside a backward
(checkpointing a bound ``forward`` is reported once, where it is first called).
A direct call through such a wrapper is reported at the caller's line.

Not watched: TorchScript modules, modules with a per-instance ``forward``
attribute (set by other libraries; their wrapper calls the class ``forward``
on purpose), and ``ModuleList``/``ModuleDict`` (no ``forward`` of their own).
Inside ``torch.compile`` regions the probe steps aside (they are not
watched); ``torch.jit.script`` of a watched class still sees the original
source; ``copy.deepcopy`` and ``pickle`` see modules exactly as before.
"""

from __future__ import annotations

import linecache
import os
import re
import threading
import types
import warnings
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

import torch
from torch import nn
from torch.nn.modules import module as torch_module

from hookscope._interrupts import critical
from hookscope.errors import BypassError, BypassWarning, UsageError
from hookscope.hooks.describe import callable_name
from hookscope.hooks.firing import COUNTED_ATTR
from hookscope.hooks.probe import (
    ModuleActivity,
    forward_owner,
    has_no_forward,
    patch,
    set_tracking,
    unpatch,
    unwatch,
    unwatch_all,
    watch,
    watch_all,
    watchable,
)
from hookscope.hooks.selection import ModuleSelector, select_modules
from hookscope.modtree import aliases, walk

BypassPolicy = Literal["record", "warn", "raise"]
_POLICIES = get_args(BypassPolicy)

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FORWARD_CALL = re.compile(r"\.forward\s*\(")
_TRAILING_COMMENT = re.compile(r"\s+#[^'\"]*$")

#: Module hook dicts whose hooks a direct ``.forward`` call skips, with the kind reported.
_SKIPPED_DICTS = (
    ("_forward_pre_hooks", "forward_pre"),
    ("_forward_hooks", "forward"),
    ("_backward_pre_hooks", "backward_pre"),
    ("_backward_hooks", "backward"),
)
_SKIPPED_GLOBALS = (
    ("_global_forward_pre_hooks", "global_forward_pre"),
    ("_global_forward_hooks", "global_forward"),
    ("_global_backward_pre_hooks", "global_backward_pre"),
    ("_global_backward_hooks", "global_backward"),
)


@dataclass(frozen=True)
class BypassRecord:
    """A module whose ``forward`` ran without ``__call__``, at one call site.

    Attributes:
        module: qualified name of the module (for ``hookscope run``, the
            attribute name under its caller when known, else the type name).
        names: every qualified name of the module (shared modules have several).
        module_type: the module's class name, e.g. ``"Linear"``.
        call_site: ``file:line`` of the code that invoked ``.forward``.
        source: that line of code, stripped (``""`` when unavailable).
        count: how many times the forward ran from this call site.
        hooks_skipped: ``kind:hook`` of each hook that did not run, e.g.
            ``"forward_pre:torch.nn.utils.prune.L1Unstructured.__call__"``.
    """

    module: str
    names: tuple[str, ...]
    module_type: str
    call_site: str
    source: str
    count: int
    hooks_skipped: tuple[str, ...]

    @property
    def fix(self) -> str:
        """The call rewritten to go through ``__call__`` (so hooks run)."""
        if self.source and _FORWARD_CALL.search(self.source):
            return _FORWARD_CALL.sub("(", _TRAILING_COMMENT.sub("", self.source), count=1)
        leaf = self.module.rsplit(".", 1)[-1] or "module"
        return f"call the module, {leaf}(x), instead of {leaf}.forward(x)"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for JSON)."""
        data = asdict(self)
        data["names"] = list(self.names)
        data["hooks_skipped"] = list(self.hooks_skipped)
        data["fix"] = self.fix
        return data


@dataclass
class _Site:
    module: str
    names: tuple[str, ...]
    module_type: str
    call_site: str
    source: str
    hooks_skipped: tuple[str, ...]
    count: int = 0


def _hook_name(fn: Any) -> str:
    return callable_name(getattr(fn, COUNTED_ATTR, fn))


def skipped_hooks(module: nn.Module) -> tuple[str, ...]:
    """``kind:hook`` of every hook that a direct ``module.forward(x)`` call skips."""
    found = []
    for attr, kind in _SKIPPED_DICTS:
        found += [f"{kind}:{_hook_name(fn)}" for fn in getattr(module, attr).values()]
    for attr, kind in _SKIPPED_GLOBALS:
        found += [f"{kind}:{_hook_name(fn)}" for fn in getattr(torch_module, attr).values()]
    return tuple(found)


def call_site(frame: types.FrameType) -> tuple[str, str]:
    """``(file:line, source line)`` of ``frame``, stepping out of torch's own files."""
    outer: types.FrameType | None = frame
    while outer is not None and outer.f_code.co_filename.startswith(_TORCH_DIR):
        outer = outer.f_back
    chosen = outer or frame
    filename, line = chosen.f_code.co_filename, chosen.f_lineno
    return f"{filename}:{line}", linecache.getline(filename, line).strip()


def _name_from_caller(module: nn.Module, frame: types.FrameType) -> str:
    """For unwatched-by-name modules: the attribute name under the calling module."""
    owner = frame.f_locals.get("self")
    if isinstance(owner, nn.Module):
        for name, child in owner.named_children():
            if child is module:
                return name
    return type(module).__name__


class BypassDetector:
    """Watches modules for ``forward`` calls that bypass ``__call__`` (and so every hook).

    Sessions create one with ``hookscope.session(model, detect_bypass=True)``;
    the doctor creates one with ``track=True``.

    Args:
        model: the root module; watched modules are named relative to it
            (None with `attach_all`, which watches every module).
        policy: on a bypass, ``"record"`` it, also ``"warn"`` (a `BypassWarning`
            once per module and call site) or ``"raise"`` a `BypassError`
            before the forward runs.
        track: also count every forward run per module, with grad mode and
            whether the output requires grad (`ModuleActivity`).
    """

    def __init__(
        self, model: nn.Module | None, *, policy: BypassPolicy = "record", track: bool = False
    ) -> None:
        if policy not in _POLICIES:
            raise UsageError(f"bypass must be one of {_POLICIES}, got {policy!r}")
        self.model = model
        self.policy: BypassPolicy = policy
        self.track = track
        self.watched: dict[int, tuple[weakref.ref[nn.Module], tuple[str, ...]]] = {}
        self.activity: dict[int, ModuleActivity] = {}
        self._sites: dict[tuple[int, str], _Site] = {}
        self._classes: list[type[nn.Module]] = []
        #: Whether `attach` put a probe on every module of the model (see `hookscope.hooks.observers`)
        self.every_module = False
        self._attached = False
        self._lock = threading.RLock()

    @property
    def records(self) -> list[BypassRecord]:
        """One record per (module, call site), in the order first seen."""
        with self._lock:
            sites = list(self._sites.values())
        return [
            BypassRecord(
                s.module, s.names, s.module_type, s.call_site, s.source, s.count, s.hooks_skipped
            )
            for s in sites
        ]

    @critical
    def attach(self, modules: ModuleSelector = None) -> None:
        """Start watching the selected modules of the model (default: all)."""
        if self.model is None:
            raise UsageError("attach() needs the detector's model; use attach_all() without one")
        if modules is None and isinstance(self.model, nn.Module):  # all, without records
            names = aliases(self.model)
            chosen = [(module, names[id(module)]) for _, module in walk(self.model)]
        else:  # a bad selector raises before any change
            chosen = [(s.module, s.names) for s in select_modules(self.model, modules)]
        self._start()
        watch(self)  # bypasses of the modules entered in ``watched`` below reach us
        owners: dict[type[nn.Module], type[nn.Module] | None] = {}  # by class, for this loop
        self.every_module = modules is None
        for module, module_names in chosen:
            owner = watchable(module, owners)
            if owner is None:
                # a container without a forward (ModuleList) cannot be called: nothing to see
                self.every_module &= has_no_forward(module)
                continue
            self.watched[id(module)] = (weakref.ref(module), module_names)
            if owner not in self._classes:  # each class patched (and counted) once
                patch(owner)
                self._classes.append(owner)

    @critical
    def attach_all(self) -> None:
        """Watch every ``nn.Module`` in the process, including classes defined later."""
        self._start()
        watch_all(self)

    @critical
    def detach(self) -> None:
        """Stop watching; every patched class gets its original ``forward`` back."""
        if not self._attached:
            return
        with self._lock:
            self._attached = False
            unwatch(self)
            unwatch_all(self)
            for cls in self._classes:
                unpatch(cls)
            self._classes = []
            if self.track:
                set_tracking(-1)

    def _start(self) -> None:
        if self._attached:
            raise UsageError("this bypass detector is already attached")
        self._attached = True
        if self.track:
            set_tracking(+1)

    def _patch_class(self, cls: type[nn.Module]) -> None:
        if issubclass(cls, torch.jit.ScriptModule) or forward_owner(cls) is not cls:
            return
        patch(cls)
        self._classes.append(cls)

    def _activity(self, module: nn.Module) -> ModuleActivity:
        activity = self.activity.get(id(module))
        if activity is None:
            activity = self.activity.setdefault(id(module), ModuleActivity())
        return activity

    def _bypassed(self, module: nn.Module, frame: types.FrameType) -> None:
        where, source = call_site(frame)
        key = (id(module), where)
        with self._lock:
            site = self._sites.get(key)
            first = site is None
            if site is None:
                site = self._sites[key] = self._new_site(module, frame, where, source)
            site.count += 1
        if self.policy == "record" or (self.policy == "warn" and not first):
            return
        message = _message(site)
        if self.policy == "raise":
            raise BypassError(message)
        filename, _, line = where.rpartition(":")
        warnings.warn_explicit(message, BypassWarning, filename, int(line))

    def _new_site(
        self, module: nn.Module, frame: types.FrameType, where: str, source: str
    ) -> _Site:
        entry = self.watched.get(id(module))
        if entry is not None and entry[0]() is module:
            names = entry[1]
        else:
            names = (_name_from_caller(module, frame),)
        return _Site(names[0], names, type(module).__name__, where, source, skipped_hooks(module))


def _message(site: _Site) -> str:
    hooks = ", ".join(site.hooks_skipped) or "none registered yet"
    label = site.module or "(root)"
    record = BypassRecord(
        site.module, site.names, site.module_type, site.call_site, site.source, site.count, ()
    )
    return (
        f"{label} ({site.module_type}).forward was invoked directly at {site.call_site}; "
        f"hooks run only when the module is called, so these were skipped: {hooks}. "
        f"Fix: {record.fix}"
    )
