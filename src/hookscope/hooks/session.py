"""Scoped hook sessions: add hooks by selector, remove exactly those on exit.

A session wraps every user hook in a small closure that counts firings,
passes the module's qualified name, and applies the session's error policy.
On exit (normal or by exception) it removes every handle it added and puts
back the one flag PyTorch leaves behind (``_is_full_backward_hook``), so each
module's hook dicts hold exactly the keys they held before and the forward
takes PyTorch's no-hook fast path again.
"""

from __future__ import annotations

import threading
import traceback
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, get_args

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from hookscope.errors import HookError, HookWarning, UsageError
from hookscope.hooks.compiled import tracing, warn_stale
from hookscope.hooks.describe import WRAPPED_ATTR, callable_name
from hookscope.hooks.handles import HandleGroup, HookFailure, HookKind, Registration
from hookscope.hooks.selection import (
    ModuleSelector,
    SelectedModule,
    module_names,
    param_matcher,
    select_modules,
    select_params,
)
from hookscope.shards import FlatSlot, flat_groups

__all__ = [
    "BypassPolicy",
    "HandleGroup",
    "HookFailure",
    "HookKind",
    "HookSession",
    "OnError",
    "Registration",
    "active_sessions",
    "session",
]

OnError = Literal["raise", "warn", "disable"]
BypassPolicy = Literal["record", "warn", "raise"]

_ON_ERROR = get_args(OnError)
_BYPASS = get_args(BypassPolicy)


@dataclass
class _Snapshot:
    """Per-object state PyTorch changes as a side effect of registering hooks."""

    full_backward_flags: dict[int, tuple[weakref.ref[nn.Module], bool | None]] = field(
        default_factory=dict
    )
    tensor_hook_dicts: dict[int, tuple[weakref.ref[torch.Tensor], bool]] = field(
        default_factory=dict
    )


class HookSession:
    """Context manager that owns every hook it adds. Create with `hookscope.session`."""

    def __init__(
        self,
        model: nn.Module,
        *,
        on_error: OnError = "raise",
        detect_bypass: bool = False,
        bypass: BypassPolicy = "record",
        bypass_modules: ModuleSelector = None,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise UsageError(f"session() needs an nn.Module, got {type(model).__name__}")
        if on_error not in _ON_ERROR:
            raise UsageError(f"on_error must be one of {_ON_ERROR}, got {on_error!r}")
        if bypass not in _BYPASS:
            raise UsageError(f"bypass must be one of {_BYPASS}, got {bypass!r}")
        self.model = model
        self.on_error: OnError = on_error
        self.detect_bypass = detect_bypass
        self.bypass_policy: BypassPolicy = bypass
        self.bypass_modules = bypass_modules
        self.registrations: list[Registration] = []
        self.errors: list[HookFailure] = []
        self.depth = 0
        self._active = False
        self._lock = threading.Lock()
        self._snapshot = _Snapshot()
        self._bypass: Any = None
        #: Whether hooks on compiled graphs traced without them were looked for
        #: (`hookscope.hooks.compiled.warn_stale`, once per session; a Monitor does its own).
        self.stale_checked = False

    # -- lifecycle -----------------------------------------------------------------

    def __enter__(self) -> HookSession:
        if self._active:
            raise UsageError("this session is already active; create a new one to nest")
        self._active = True
        self.depth = _ACTIVE_DEPTH.get(id(self.model), 0) + 1
        _ACTIVE_DEPTH[id(self.model)] = self.depth
        _LIVE.add(self)
        if self.detect_bypass:
            from hookscope.hooks.bypass import BypassDetector

            self._bypass = BypassDetector(self.model, policy=self.bypass_policy)
            try:
                self._bypass.attach(self.bypass_modules)
            except BaseException:
                self.close()
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Remove every hook this session added and restore PyTorch's side-effect flags."""
        if not self._active:
            return
        try:
            if self._bypass is not None:
                self._bypass.detach()
            for reg in self.registrations:
                if reg.handle is not None:
                    reg.handle.remove()
            self._restore()
        finally:
            self._active = False
            _LIVE.discard(self)
            depth = _ACTIVE_DEPTH.get(id(self.model), 1) - 1
            if depth > 0:
                _ACTIVE_DEPTH[id(self.model)] = depth
            else:
                _ACTIVE_DEPTH.pop(id(self.model), None)

    @property
    def active(self) -> bool:
        """True between ``__enter__`` and ``__exit__``."""
        return self._active

    @property
    def bypasses(self) -> list[Any]:
        """Bypass records (see `hookscope.hooks.bypass`); empty without ``detect_bypass``."""
        return [] if self._bypass is None else list(self._bypass.records)

    # -- adding hooks --------------------------------------------------------------

    def add_forward_hook(
        self,
        hook: Callable[..., Any],
        modules: ModuleSelector = None,
        *,
        leaves_only: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
        prepend: bool = False,
    ) -> HandleGroup:
        """Run ``hook`` after each selected module's ``forward``.

        The hook is called as ``hook(name, module, args, output) -> output | None``,
        or with ``with_kwargs=True`` as
        ``hook(name, module, args, kwargs, output) -> output | None``; ``name`` is
        the module's qualified name. A non-None return replaces the output.
        ``always_call`` runs the hook also when the forward raised; ``prepend``
        puts it before hooks already registered.
        """
        return self._add(
            "forward",
            hook,
            modules,
            leaves_only,
            lambda m, fn: m.register_forward_hook(
                fn, prepend=prepend, with_kwargs=with_kwargs, always_call=always_call
            ),
        )

    def add_forward_pre_hook(
        self,
        hook: Callable[..., Any],
        modules: ModuleSelector = None,
        *,
        leaves_only: bool = False,
        with_kwargs: bool = False,
        prepend: bool = False,
    ) -> HandleGroup:
        """Run ``hook`` before each selected module's ``forward``.

        The hook is called as ``hook(name, module, args) -> args | None``, or
        with ``with_kwargs=True`` as
        ``hook(name, module, args, kwargs) -> tuple[args, kwargs] | None``.
        """
        return self._add(
            "forward_pre",
            hook,
            modules,
            leaves_only,
            lambda m, fn: m.register_forward_pre_hook(fn, prepend=prepend, with_kwargs=with_kwargs),
        )

    def add_backward_hook(
        self,
        hook: Callable[..., Any],
        modules: ModuleSelector = None,
        *,
        leaves_only: bool = False,
        prepend: bool = False,
    ) -> HandleGroup:
        """Run ``hook`` when gradients w.r.t. each selected module's inputs are computed.

        A full backward hook, called as
        ``hook(name, module, grad_input, grad_output) -> grad_input | None``.
        """
        return self._add(
            "backward",
            hook,
            modules,
            leaves_only,
            lambda m, fn: self._full_backward(m, m.register_full_backward_hook, fn, prepend),
        )

    def add_backward_pre_hook(
        self,
        hook: Callable[..., Any],
        modules: ModuleSelector = None,
        *,
        leaves_only: bool = False,
        prepend: bool = False,
    ) -> HandleGroup:
        """Run ``hook`` when gradients w.r.t. each selected module's outputs are computed.

        Called as ``hook(name, module, grad_output) -> grad_output | None``.
        """
        return self._add(
            "backward_pre",
            hook,
            modules,
            leaves_only,
            lambda m, fn: self._full_backward(m, m.register_full_backward_pre_hook, fn, prepend),
        )

    def add_grad_hook(self, hook: Callable[..., Any], params: ModuleSelector = None) -> HandleGroup:
        """Run ``hook`` after a parameter's ``.grad`` has been accumulated.

        Called as ``hook(name, param) -> None`` where ``name`` is the parameter's
        qualified name (``"layer1.0.conv1.weight"``). ``params`` selects by glob
        on parameter names (with or without wrapper components such as DDP's
        ``module.``), a predicate ``(name, param) -> bool``, or a list of
        globs; tied parameters are hooked once and reported under every name.

        Under FSDP1 (``FullyShardedDataParallel``, flat or original parameters)
        autograd accumulates into each unit's flat parameter, never into the
        original parameters. Their names (as ``use_orig_params=True`` gives
        them) are matched instead, and ``hook`` runs when the flat gradient is
        accumulated, before FSDP's reduce-scatter, with ``param`` a detached
        view of the whole original parameter whose ``.grad`` is this rank's
        local gradient of it: the same moment and meaning as under DDP. A
        predicate sees a meta tensor of the parameter's shape there.
        """
        self._check_active()
        groups = flat_groups(self.model)
        covered = {key for group in groups for key in group.covered}
        regs = []
        for names, param in select_params(self.model, params):
            if id(param) in covered:
                continue
            reg = self.record("grad", hook, names, param)
            self._remember_tensor(param)
            reg.handle = param.register_post_accumulate_grad_hook(self._wrap(reg))
            regs.append(reg)
        matches = param_matcher(params)
        for group in groups:
            flat = group.flat
            for slot in group.slots:
                shape = torch.empty(slot.shape, dtype=flat.dtype, device="meta")
                if flat.requires_grad and matches(slot.names, shape):
                    reg = self.record("grad", hook, slot.names, flat)
                    self._remember_tensor(flat)
                    reg.handle = flat.register_post_accumulate_grad_hook(
                        _slot_hook(self._wrap(reg), slot)
                    )
                    regs.append(reg)
        return HandleGroup(regs)

    # -- reports -------------------------------------------------------------------

    @property
    def fired(self) -> dict[str, dict[str, int]]:
        """How often each hook fired: ``{qualified name: {"kind:hook": count}}``.

        A shared module appears under each of its names with the same counts.
        """
        result: dict[str, dict[str, int]] = {}
        for reg in self.registrations:
            for name in reg.names:
                counts = result.setdefault(name, {})
                counts[reg.label] = counts.get(reg.label, 0) + reg.calls
        return result

    def detached(self) -> list[Registration]:
        """Registrations on modules no longer part of the model (replaced, or garbage)."""
        live = module_names(self.model)
        return [
            reg
            for reg in self.registrations
            if reg.kind != "grad" and ((target := reg.target()) is None or id(target) not in live)
        ]

    # -- internals -----------------------------------------------------------------

    def _check_active(self) -> None:
        if not self._active:
            raise UsageError("add hooks inside 'with hookscope.session(model) as s:'")

    def _add(
        self,
        kind: HookKind,
        hook: Callable[..., Any],
        modules: ModuleSelector,
        leaves_only: bool,
        register: Callable[[nn.Module, Callable[..., Any]], RemovableHandle],
    ) -> HandleGroup:
        self._check_active()
        if not callable(hook):
            raise UsageError(f"hook must be callable, got {hook!r}")
        selection = select_modules(self.model, modules, leaves_only=leaves_only)
        if not self.stale_checked:
            self.stale_checked = True
            warn_stale(self.model, "hookscope.session", eager=True, stacklevel=4)
        # one device counter per group, for the calls inside compiled graphs
        traced_calls = torch.zeros(len(selection), dtype=torch.int64)
        regs = []
        for slot, selected in enumerate(selection):
            reg = self._attach(kind, hook, selected, register)
            reg.traced_calls, reg.traced_slot = traced_calls, slot
            regs.append(reg)
        return HandleGroup(regs)

    def _attach(
        self,
        kind: HookKind,
        hook: Callable[..., Any],
        selected: SelectedModule,
        register: Callable[[nn.Module, Callable[..., Any]], RemovableHandle],
    ) -> Registration:
        reg = self.record(kind, hook, selected.names, selected.module)
        reg.handle = register(selected.module, self._wrap(reg))
        return reg

    def record(
        self, kind: HookKind, hook: Callable[..., Any], names: tuple[str, ...], target: Any
    ) -> Registration:
        """Create the session's record of a hook on ``target`` (counted in ``fired``).

        For hook mechanisms outside this class (``hooks.globals``): call `count`
        when the hook fires and `failed` when it raises.
        """
        reg = Registration(names, kind, hook, callable_name(hook), weakref.ref(target))
        self.registrations.append(reg)
        return reg

    def _full_backward(
        self,
        module: nn.Module,
        register: Callable[..., RemovableHandle],
        fn: Callable[..., Any],
        prepend: bool,
    ) -> RemovableHandle:
        # Registering a full backward (pre) hook sets module._is_full_backward_hook,
        # which removing the handle does not undo: remember the old value.
        key = id(module)
        if key not in self._snapshot.full_backward_flags:
            flag = module.__dict__.get("_is_full_backward_hook")
            self._snapshot.full_backward_flags[key] = (weakref.ref(module), flag)
        return register(fn, prepend=prepend)

    def _remember_tensor(self, tensor: torch.Tensor) -> None:
        # Tensor.register_post_accumulate_grad_hook creates the hook dict lazily.
        key = id(tensor)
        if key not in self._snapshot.tensor_hook_dicts:
            had = tensor._post_accumulate_grad_hooks is not None
            self._snapshot.tensor_hook_dicts[key] = (weakref.ref(tensor), had)

    def _restore(self) -> None:
        for ref, flag in self._snapshot.full_backward_flags.values():
            module = ref()
            if module is not None and not (module._backward_hooks or module._backward_pre_hooks):
                module._is_full_backward_hook = flag
        for tref, had in self._snapshot.tensor_hook_dicts.values():
            tensor = tref()
            if tensor is not None and not had and not tensor._post_accumulate_grad_hooks:
                tensor._post_accumulate_grad_hooks = None  # type: ignore[assignment]
        self._snapshot = _Snapshot()

    def _wrap(self, reg: Registration) -> Callable[..., Any]:
        hook = reg.hook
        name = reg.name
        lock = self._lock

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
        with self._lock:
            reg.count += 1

    def failed(self, reg: Registration, exc: Exception) -> None:
        """Apply the session's ``on_error`` policy to ``exc`` raised by ``reg``'s hook."""
        where = f"{reg.kind} hook {reg.hook_name} on module '{reg.name}'"
        if reg.kind == "grad":
            where = f"grad hook {reg.hook_name} on parameter '{reg.name}'"
        if self.on_error == "raise":
            raise HookError(
                f"{where} raised {type(exc).__name__}: {exc}",
                module_name=reg.name,
                hook_name=reg.hook_name,
                kind=reg.kind,
            ) from exc
        failure = HookFailure(reg.name, reg.hook_name, reg.kind, exc, traceback.format_exc())
        with self._lock:
            self.errors.append(failure)
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


#: Number of active sessions per model id (for ``HookSession.depth``).
_ACTIVE_DEPTH: dict[int, int] = {}
#: Sessions between ``__enter__`` and ``close`` (the doctor asks them for detached hooks).
_LIVE: weakref.WeakSet[HookSession] = weakref.WeakSet()


def active_sessions(model: nn.Module) -> list[HookSession]:
    """Active sessions opened on ``model``."""
    return [s for s in list(_LIVE) if s.model is model]


def session(
    model: nn.Module,
    *,
    on_error: OnError = "raise",
    detect_bypass: bool = False,
    bypass: BypassPolicy = "record",
    bypass_modules: ModuleSelector = None,
) -> HookSession:
    """Open a scoped hook session on ``model``.

    Use as ``with hookscope.session(model) as s:`` and add hooks with
    ``s.add_forward_hook``, ``s.add_forward_pre_hook``, ``s.add_backward_hook``,
    ``s.add_backward_pre_hook`` and ``s.add_grad_hook``. Every hook the session
    added is removed on exit, also when the body raised.

    Args:
        model: the root module; selectors match qualified names under it.
        on_error: what to do when a user hook raises: ``"raise"`` (a
            `HookError` naming module and hook), ``"warn"`` (warn once per hook,
            record in ``s.errors``, continue as if the hook returned None) or
            ``"disable"`` (like warn, and remove that hook).
        detect_bypass: record modules whose ``forward`` runs without ``__call__``.
        bypass: with ``detect_bypass``: ``"record"``, ``"warn"`` or ``"raise"``.
        bypass_modules: which modules to watch for bypasses (default: all).
    """
    return HookSession(
        model,
        on_error=on_error,
        detect_bypass=detect_bypass,
        bypass=bypass,
        bypass_modules=bypass_modules,
    )


def _slot_hook(wrapper: Callable[..., Any], slot: FlatSlot) -> Callable[[torch.Tensor], None]:
    """A flat parameter's post-accumulate-grad hook that calls ``wrapper`` with one original parameter."""

    def on_flat(flat: torch.Tensor) -> None:
        view = slot.view(flat)
        if view is not None:  # always, in a backward: the flat parameter is unsharded then
            wrapper(view)

    setattr(on_flat, WRAPPED_ATTR, getattr(wrapper, WRAPPED_ATTR))
    return on_flat
