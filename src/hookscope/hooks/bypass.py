"""Runtime detection of ``module.forward(x)`` calls that skip the module's hooks.

How it works (and why it leaves no trace on any module): while a detector is
attached, the class that defines each watched module's ``forward`` has that
``forward`` swapped for a *probe* with the same name, signature, source
(``__wrapped__``) and globals. The probe looks at the frame that called it:
``nn.Module._call_impl`` (or its nested ``inner``, or ``_slow_forward`` under
``torch.jit.trace``) means the module was *called* and its hooks ran; any other
caller invoked ``.forward`` directly. The normal path costs one extra Python
call and one ``sys._getframe``; nothing is stored on module instances, so
``copy.deepcopy``, ``pickle`` and ``state_dict`` see the module exactly as
before. On detach each class gets its original function back.

Not flagged (no false positives):
- ``super().forward(x)`` inside a subclass's own ``forward`` (the probe sees
  that the instance's own ``forward`` is a different function);
- shared modules, recursion, modules called from inside hooks, containers,
  ``torch.utils.checkpoint`` recomputation: all of these go through ``__call__``.

Not watched: TorchScript modules, modules with a per-instance ``forward``
attribute (set by other libraries; their wrapper calls the class ``forward``
on purpose), and ``ModuleList``/``ModuleDict`` (no ``forward`` of their own).
While a detector is attached, ``torch.compile`` traces through the probe and
``torch.jit.script`` of a watched class sees the original source.
"""

from __future__ import annotations

import inspect
import linecache
import os
import re
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

import torch
from torch import nn
from torch.nn.modules import module as torch_module

from hookscope.errors import BypassError, BypassWarning, UsageError
from hookscope.hooks.describe import callable_name
from hookscope.hooks.firing import COUNTED_ATTR
from hookscope.hooks.selection import ModuleSelector, select_modules

BypassPolicy = Literal["record", "warn", "raise"]
_POLICIES = get_args(BypassPolicy)

#: Attribute on a probe holding the class's original ``forward``.
ORIG_ATTR = "__hookscope_forward__"

_CALL_IMPL = nn.Module._call_impl.__code__
_INNER = next(
    (c for c in _CALL_IMPL.co_consts if isinstance(c, types.CodeType) and c.co_name == "inner"),
    _CALL_IMPL,
)
_SLOW_FORWARD = nn.Module._slow_forward.__code__
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
class ModuleActivity:
    """What a tracking detector saw one module do (used by the doctor).

    ``calls`` counts every forward run (through ``__call__`` or not); the
    other counters say under which conditions those runs happened.
    """

    calls: int = 0
    direct: int = 0
    grad_enabled: int = 0
    inference_mode: int = 0
    output_requires_grad: int = 0


@dataclass
class _Site:
    module: str
    names: tuple[str, ...]
    module_type: str
    call_site: str
    source: str
    hooks_skipped: tuple[str, ...]
    count: int = 0


@dataclass
class _Patch:
    cls: type[nn.Module]
    orig: Callable[..., Any]
    probe: Callable[..., Any]
    users: int = 0


# Process-wide state shared by all detectors (a class is patched once however
# many detectors watch its instances).
_LOCK = threading.RLock()
_PATCHES: dict[type[nn.Module], _Patch] = {}
_WATCHERS: dict[int, list[tuple[weakref.ref[nn.Module], BypassDetector]]] = {}
_WATCH_ALL: list[BypassDetector] = []
#: ``[n]``: number of attached tracking detectors; when 0 the normal path is a pass-through.
_TRACKING = [0]


def _make_probe(orig: Callable[..., Any]) -> Callable[..., Any]:
    getframe = sys._getframe
    call_impl, inner, slow = _CALL_IMPL, _INNER, _SLOW_FORWARD
    tracking = _TRACKING
    observe = _observe

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        code = getframe(1).f_code
        if (code is call_impl or code is inner or code is slow) and not tracking[0]:
            return orig(self, *args, **kwargs)
        return observe(orig, self, getframe(1), args, kwargs)

    # Same globals as the original (the body only uses closure cells), so that
    # torch.jit.script resolves names in the original source while we are attached.
    probe = types.FunctionType(
        forward.__code__,
        getattr(orig, "__globals__", forward.__globals__),
        forward.__name__,
        None,
        forward.__closure__,
    )
    probe.__kwdefaults__ = None
    for attr in ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__"):
        if hasattr(orig, attr):
            setattr(probe, attr, getattr(orig, attr))
    probe.__dict__.update(getattr(orig, "__dict__", {}))
    probe.__wrapped__ = orig  # type: ignore[attr-defined]
    setattr(probe, ORIG_ATTR, orig)
    return probe


def _observe(
    orig: Callable[..., Any], module: Any, caller: types.FrameType, args: Any, kwargs: Any
) -> Any:
    code = caller.f_code
    via_call = code is _CALL_IMPL or code is _INNER or code is _SLOW_FORWARD
    if not via_call and getattr(type(module).forward, ORIG_ATTR, None) is not orig:
        # super().forward(x) inside a subclass's forward: part of that forward's run.
        return orig(module, *args, **kwargs)
    detectors = _detectors_for(module)
    if not via_call:
        for detector in detectors:
            detector._bypassed(module, caller)
    trackers = [d for d in detectors if d.track]
    if not trackers:
        return orig(module, *args, **kwargs)
    grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    activities = [d._activity(module) for d in trackers]
    for activity in activities:
        activity.calls += 1
        activity.direct += not via_call
        activity.grad_enabled += grad
        activity.inference_mode += inference
    output = orig(module, *args, **kwargs)
    if _requires_grad(output):
        for activity in activities:
            activity.output_requires_grad += 1
    return output


def _requires_grad(value: Any, depth: int = 0) -> bool:
    if isinstance(value, torch.Tensor):
        return value.requires_grad
    if depth > 3:
        return False
    if isinstance(value, dict):
        return any(_requires_grad(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_requires_grad(v, depth + 1) for v in value)
    return False


def _detectors_for(module: nn.Module) -> list[BypassDetector]:
    found = [det for ref, det in _WATCHERS.get(id(module), ()) if ref() is module]
    for det in _WATCH_ALL:
        if det not in found:
            found.append(det)
    return found


def _forward_owner(cls: type[nn.Module]) -> type[nn.Module] | None:
    """The class in the MRO whose own ``forward`` a call resolves to, if patchable."""
    for klass in cls.__mro__:
        if "forward" in klass.__dict__:
            func = klass.__dict__["forward"]
            if klass is nn.Module or not inspect.isfunction(func):
                return None
            return klass
    return None


def _patch(cls: type[nn.Module]) -> None:
    with _LOCK:
        patch = _PATCHES.get(cls)
        if patch is None:
            orig = cls.__dict__["forward"]
            patch = _PATCHES[cls] = _Patch(cls, orig, _make_probe(orig))
            cls.forward = patch.probe
        patch.users += 1


def _unpatch(cls: type[nn.Module]) -> None:
    with _LOCK:
        patch = _PATCHES.get(cls)
        if patch is None:
            return
        patch.users -= 1
        if patch.users > 0:
            return
        del _PATCHES[cls]
        # Someone may have wrapped our probe since; then leave theirs in place
        # (the probe is a pass-through once nothing watches).
        if cls.__dict__.get("forward") is patch.probe:
            cls.forward = patch.orig


def _watchable(module: nn.Module) -> type[nn.Module] | None:
    if isinstance(module, torch.jit.ScriptModule) or "forward" in module.__dict__:
        return None
    return _forward_owner(type(module))


def _all_subclasses(root: type[nn.Module]) -> list[type[nn.Module]]:
    seen: dict[type[nn.Module], None] = {}
    stack = [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen[sub] = None
                stack.append(sub)
    return list(seen)


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
        self._all = False
        self._attached = False

    @property
    def records(self) -> list[BypassRecord]:
        """One record per (module, call site), in the order first seen."""
        with _LOCK:
            sites = list(self._sites.values())
        return [
            BypassRecord(
                s.module, s.names, s.module_type, s.call_site, s.source, s.count, s.hooks_skipped
            )
            for s in sites
        ]

    def attach(self, modules: ModuleSelector = None) -> None:
        """Start watching the selected modules of the model (default: all)."""
        if self.model is None:
            raise UsageError("attach() needs the detector's model; use attach_all() without one")
        self._start()
        for selected in select_modules(self.model, modules):
            owner = _watchable(selected.module)
            if owner is None:
                continue
            key = id(selected.module)
            with _LOCK:
                self.watched[key] = (weakref.ref(selected.module), selected.names)
                _WATCHERS.setdefault(key, []).append((weakref.ref(selected.module), self))
            _patch(owner)
            self._classes.append(owner)

    def attach_all(self) -> None:
        """Watch every ``nn.Module`` in the process, including classes defined later."""
        self._start()
        self._all = True
        with _LOCK:
            _WATCH_ALL.append(self)
            for cls in _all_subclasses(nn.Module):
                self._patch_class(cls)
            if "__init_subclass__" not in nn.Module.__dict__:
                nn.Module.__init_subclass__ = _ON_SUBCLASS  # type: ignore[assignment]

    def detach(self) -> None:
        """Stop watching; every patched class gets its original ``forward`` back."""
        if not self._attached:
            return
        with _LOCK:
            self._attached = False
            for key in self.watched:
                entries = [e for e in _WATCHERS.get(key, []) if e[1] is not self]
                if entries:
                    _WATCHERS[key] = entries
                else:
                    _WATCHERS.pop(key, None)
            if self in _WATCH_ALL:
                _WATCH_ALL.remove(self)
            if not _WATCH_ALL and nn.Module.__dict__.get("__init_subclass__") is _ON_SUBCLASS:
                del nn.Module.__init_subclass__
            for cls in self._classes:
                _unpatch(cls)
            self._classes = []
            if self.track:
                _TRACKING[0] -= 1

    def _start(self) -> None:
        if self._attached:
            raise UsageError("this bypass detector is already attached")
        self._attached = True
        if self.track:
            with _LOCK:
                _TRACKING[0] += 1

    def _patch_class(self, cls: type[nn.Module]) -> None:
        if issubclass(cls, torch.jit.ScriptModule) or _forward_owner(cls) is not cls:
            return
        _patch(cls)
        self._classes.append(cls)

    def _activity(self, module: nn.Module) -> ModuleActivity:
        activity = self.activity.get(id(module))
        if activity is None:
            activity = self.activity.setdefault(id(module), ModuleActivity())
        return activity

    def _bypassed(self, module: nn.Module, frame: types.FrameType) -> None:
        where, source = call_site(frame)
        key = (id(module), where)
        with _LOCK:
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


def _on_subclass(cls: type[nn.Module], /, **kwargs: Any) -> None:
    super(nn.Module, cls).__init_subclass__(**kwargs)
    with _LOCK:
        for detector in _WATCH_ALL:
            detector._patch_class(cls)


#: The exact object put on ``nn.Module`` (compared by identity when removing it).
_ON_SUBCLASS = classmethod(_on_subclass)


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
