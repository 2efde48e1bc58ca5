"""The forward probe behind bypass detection: class-level, no trace on instances.

While any detector watches a module, the class that defines that module's
``forward`` has it swapped for a *probe* with the same name, signature,
source (``__wrapped__``) and globals. The probe looks at the frame that called
it: ``nn.Module._call_impl`` (or its nested ``inner``, or ``_slow_forward``
under ``torch.jit.trace``) means the module was *called* and its hooks ran;
any other caller invoked ``.forward`` directly; a called module's probe
also runs the call observers (`hookscope.hooks.observers`). The normal path
costs one extra Python call and one ``sys._getframe``; nothing is stored on
module instances, so ``copy.deepcopy``, ``pickle`` and ``state_dict`` see modules
exactly as before. A class gets its original function back when the last
detector watching one of its instances detaches.

``super().forward(x)`` inside a subclass's own ``forward`` is not a bypass:
the probe sees that the instance's own ``forward`` is a different function.
Nor is a wrapper around ``forward`` that runs inside the module's own call
(transformers' ``GradientCheckpointingLayer.__init_subclass__`` wraps every
decoder layer's ``forward``, accelerate puts autocast / fp32-output wrappers
on a model's instance ``forward``): the probe's caller is then the wrapper,
and the nearest module call above it is this module's (see `_wrapped_call`).
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import torch
from torch import nn

from hookscope.hooks.observers import POST, PRE, observed_call

#: Attribute on a probe holding the class's original ``forward``.
ORIG_ATTR = "__hookscope_forward__"

_CALL_IMPL = nn.Module._call_impl.__code__
_INNER = next(
    (c for c in _CALL_IMPL.co_consts if isinstance(c, types.CodeType) and c.co_name == "inner"),
    _CALL_IMPL,
)
_SLOW_FORWARD = nn.Module._slow_forward.__code__
_CALL_CODES = (_CALL_IMPL, _INNER, _SLOW_FORWARD)
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
#: How many frames above the probe's caller `_wrapped_call` looks for a module call.
_WRAPPER_DEPTH = 12


@dataclass
class ModuleActivity:
    """What a tracking detector saw one module do (used by the doctor).

    ``calls`` counts every forward run (through ``__call__`` or not); the
    other counters say under which conditions those runs happened.
    """

    calls: int = 0
    grad_enabled: int = 0
    inference_mode: int = 0
    output_requires_grad: int = 0


class Watcher(Protocol):
    """What the probe needs from a detector."""

    track: bool
    #: ``id(module) -> (weak reference to it, its names)`` for the modules it watches
    watched: dict[int, tuple[weakref.ref[nn.Module], tuple[str, ...]]]

    def _bypassed(self, module: nn.Module, frame: types.FrameType) -> None: ...

    def _activity(self, module: nn.Module) -> ModuleActivity: ...

    def _patch_class(self, cls: type[nn.Module]) -> None: ...


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
#: original ``forward`` -> its probe, made once: a summary patches every class of its model
_PROBES: weakref.WeakKeyDictionary[Callable[..., Any], Callable[..., Any]] = (
    weakref.WeakKeyDictionary()
)
#: detectors watching the modules in their ``watched`` (looked up only on a bypass)
_WATCHING: list[Watcher] = []
_WATCH_ALL: list[Watcher] = []
#: ``[n]``: number of attached tracking detectors; when 0 the normal path is a pass-through.
_TRACKING = [0]


def _make_probe(orig: Callable[..., Any]) -> Callable[..., Any]:
    # Closure names carry a _hs_ prefix: torch.jit.script resolves the original
    # source's free names through this function's closure first, then its globals.
    _hs_orig = orig
    _hs_getframe = sys._getframe
    _hs_call_impl, _hs_inner, _hs_slow = _CALL_IMPL, _INNER, _SLOW_FORWARD
    _hs_tracking = _TRACKING
    _hs_observe = _observe
    _hs_pre, _hs_post, _hs_called = PRE, POST, observed_call
    # Under torch.compile, dynamo reads this as True and inlines the original
    # forward (it cannot trace sys._getframe); compiled regions are not watched.
    _hs_compiling = torch.compiler.is_compiling

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _hs_compiling():
            return _hs_orig(self, *args, **kwargs)
        code = _hs_getframe(1).f_code
        if (code is _hs_call_impl or code is _hs_inner or code is _hs_slow) and not _hs_tracking[0]:
            if _hs_pre or _hs_post:
                return _hs_called(_hs_orig, self, args, kwargs)
            return _hs_orig(self, *args, **kwargs)
        return _hs_observe(_hs_orig, self, _hs_getframe(1), args, kwargs)

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
    # called through ``__call__`` (hooks ran), directly or through a forward wrapper
    called = code is _CALL_IMPL or code is _INNER or code is _SLOW_FORWARD
    called = called or _wrapped_call(module, caller)
    via_call = called or _recomputing()
    if not via_call and getattr(type(module).forward, ORIG_ATTR, None) is not orig:
        # super().forward(x) inside a subclass's forward: part of that forward's run.
        return orig(module, *args, **kwargs)
    if called and (PRE or POST):
        orig = partial(_with_observers, orig)
    detectors = _detectors_for(module)
    if not via_call:
        site = _outside_wrappers(module, caller)
        for detector in detectors:
            detector._bypassed(module, site)
    trackers = [d for d in detectors if d.track]
    if not trackers:
        return orig(module, *args, **kwargs)
    grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    activities = [d._activity(module) for d in trackers]
    for activity in activities:
        activity.calls += 1
        activity.grad_enabled += grad
        activity.inference_mode += inference
    output = orig(module, *args, **kwargs)
    if _requires_grad(output):
        for activity in activities:
            activity.output_requires_grad += 1
    return output


def _with_observers(orig: Callable[..., Any], module: Any, *args: Any, **kwargs: Any) -> Any:
    return observed_call(orig, module, args, kwargs)


def _wrapped_call(module: nn.Module, caller: types.FrameType) -> bool:
    """True when ``caller`` (not ``nn.Module.__call__``) runs inside ``module``'s own call.

    The nearest module call frame above ``caller`` decides: ``module``'s own
    means a wrapper of its ``forward`` called the probe after the hooks ran;
    another module's (a parent's ``forward`` calling ``child.forward(x)``), or
    none within `_WRAPPER_DEPTH` frames, means a bypass.
    """
    frame = caller.f_back
    for _ in range(_WRAPPER_DEPTH):
        if frame is None:
            return False
        if frame.f_code in _CALL_CODES:
            return frame.f_locals.get("self") is module
        frame = frame.f_back
    return False


def _recomputing() -> bool:
    """True inside a backward: activation checkpointing re-runs ``forward`` there on purpose.

    (transformers checkpoints ``forward`` rather than ``__call__`` so that hooks
    run once, in the original forward.)
    """
    return bool(torch._C._current_graph_task_id() != -1)


def _forward_codes(module: nn.Module) -> set[types.CodeType]:
    """Code of the module's ``forward`` and of each wrapper around it (``__wrapped__``)."""
    codes: set[types.CodeType] = set()
    fn: Any = module.__dict__.get("forward", type(module).forward)
    for _ in range(_WRAPPER_DEPTH):
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)
        if code is not None:
            codes.add(code)
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            break
    return codes


def _outside_wrappers(module: nn.Module, caller: types.FrameType) -> types.FrameType:
    """The frame that called ``module.forward``: ``caller`` less forward wrappers and torch's frames."""
    codes = _forward_codes(module)
    frame = caller
    while frame.f_back is not None and (
        frame.f_code in codes or frame.f_code.co_filename.startswith(_TORCH_DIR)
    ):
        frame = frame.f_back
    return frame


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


def _detectors_for(module: nn.Module) -> list[Watcher]:
    found = []
    for det in _WATCHING:
        entry = det.watched.get(id(module))
        if entry is not None and entry[0]() is module:
            found.append(det)
    for det in _WATCH_ALL:
        if det not in found:
            found.append(det)
    return found


def forward_owner(cls: type[nn.Module]) -> type[nn.Module] | None:
    """The class in the MRO whose own ``forward`` a call resolves to, if patchable."""
    for klass in cls.__mro__:
        if "forward" in klass.__dict__:
            func = klass.__dict__["forward"]
            if klass is nn.Module or not inspect.isfunction(func):
                return None
            return klass
    return None


def patch(cls: type[nn.Module]) -> None:
    with _LOCK:
        patch = _PATCHES.get(cls)
        if patch is None:
            orig = cls.__dict__["forward"]
            probe = _PROBES.get(orig)
            if probe is None:
                probe = _PROBES[orig] = _make_probe(orig)
            patch = _PATCHES[cls] = _Patch(cls, orig, probe)
            cls.forward = patch.probe
        patch.users += 1


def unpatch(cls: type[nn.Module]) -> None:
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


def watchable(
    module: nn.Module, owners: dict[type[nn.Module], type[nn.Module] | None] | None = None
) -> type[nn.Module] | None:
    """The class whose ``forward`` to patch to watch ``module``, or None (not patchable).

    ``owners`` memoises `forward_owner` by class for a caller looking at many modules.
    """
    if isinstance(module, torch.jit.ScriptModule) or "forward" in module.__dict__:
        return None
    kind = type(module)
    if owners is None:
        return forward_owner(kind)
    if kind not in owners:
        owners[kind] = forward_owner(kind)
    return owners[kind]


def has_no_forward(module: nn.Module) -> bool:
    """True for a module whose ``forward`` is `nn.Module`'s own (``ModuleList``): calling it raises."""
    return "forward" not in module.__dict__ and type(module).forward is nn.Module.forward


def all_subclasses(root: type[nn.Module]) -> list[type[nn.Module]]:
    seen: dict[type[nn.Module], None] = {}
    stack = [root]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen[sub] = None
                stack.append(sub)
    return list(seen)


def _on_subclass(cls: type[nn.Module], /, **kwargs: Any) -> None:
    # Installed as nn.Module.__init_subclass__ while a detector watches everything.
    super(nn.Module, cls).__init_subclass__(**kwargs)
    with _LOCK:
        for detector in _WATCH_ALL:
            detector._patch_class(cls)


#: The exact object put on ``nn.Module`` (compared by identity when removing it).
_ON_SUBCLASS = classmethod(_on_subclass)


def watch(watcher: Watcher) -> None:
    """Route bypasses of the modules in ``watcher.watched`` to it (the caller patches classes)."""
    with _LOCK:
        _WATCHING.append(watcher)


def unwatch(watcher: Watcher) -> None:
    """Stop routing bypasses to ``watcher`` (undoes `watch`)."""
    with _LOCK:
        if watcher in _WATCHING:
            _WATCHING.remove(watcher)


def watch_all(watcher: Watcher) -> None:
    """Route bypasses of every module to ``watcher``; patch every class, also later ones."""
    with _LOCK:
        _WATCH_ALL.append(watcher)
        for cls in all_subclasses(nn.Module):
            watcher._patch_class(cls)
        if "__init_subclass__" not in nn.Module.__dict__:
            nn.Module.__init_subclass__ = _ON_SUBCLASS  # type: ignore[assignment]


def unwatch_all(watcher: Watcher) -> None:
    """Undo `watch_all` for ``watcher`` (the caller unpatches its classes)."""
    with _LOCK:
        if watcher in _WATCH_ALL:
            _WATCH_ALL.remove(watcher)
        if not _WATCH_ALL and nn.Module.__dict__.get("__init_subclass__") is _ON_SUBCLASS:
            del nn.Module.__init_subclass__


def set_tracking(delta: int) -> None:
    """Count tracking detectors in (+1) and out (-1); with none, called modules pass straight through."""
    with _LOCK:
        _TRACKING[0] += delta
