"""Scoped hook sessions: add hooks by selector, remove exactly those on exit.

A session wraps every user hook in a small closure that counts firings,
passes the module's qualified name, and applies the session's error policy
(`hookscope.hooks.policy`). On exit (normal or by exception) it removes every
handle it added and puts back the flags PyTorch leaves behind
(`hookscope.hooks.sideeffects`), so each module's hook dicts hold exactly
the keys they held before and the forward takes PyTorch's no-hook fast path
again.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, get_args

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from hookscope._interrupts import critical, guard, setup_interrupted
from hookscope.errors import SelectionWarning, UsageError
from hookscope.hooks.compiled import warn_stale
from hookscope.hooks.describe import callable_name
from hookscope.hooks.handles import HandleGroup, HookFailure, HookKind, Registration
from hookscope.hooks.modelwide import PostHook, PreHook, add_model_hooks
from hookscope.hooks.paramgrads import grad_targets, slot_hook
from hookscope.hooks.policy import ON_ERROR, HookRunner, OnError
from hookscope.hooks.selection import (
    ModuleSelector,
    SelectedModule,
    module_names,
    nothing_selected,
    select_modules,
)
from hookscope.hooks.sideeffects import SideEffects
from hookscope.names import CleanNames

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

BypassPolicy = Literal["record", "warn", "raise"]

_BYPASS = get_args(BypassPolicy)


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
        keep_wrappers: bool = False,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise UsageError(f"session() needs an nn.Module, got {type(model).__name__}")
        if on_error not in ON_ERROR:
            raise UsageError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
        if bypass not in _BYPASS:
            raise UsageError(f"bypass must be one of {_BYPASS}, got {bypass!r}")
        self.model = model
        self.on_error: OnError = on_error
        self.detect_bypass = detect_bypass
        self.bypass_policy: BypassPolicy = bypass
        self.bypass_modules = bypass_modules
        self.keep_wrappers = keep_wrappers
        #: Count hook calls inside compiled graphs (an in-graph counter per group); the
        #: Monitor turns this off for its own session, where nothing reads those counts.
        self.count_traced = True
        self._clean: CleanNames | None = None
        self.registrations: list[Registration] = []
        self._runner = HookRunner(on_error)
        self.errors: list[HookFailure] = self._runner.errors
        self.depth = 0
        self._active = False
        self._effects = SideEffects()
        self._bypass: Any = None
        #: Holds SIGINT's handler while the session is open, so that `close`
        #: runs to its end under Ctrl-C (`hookscope._interrupts`).
        self._guard = guard()
        #: Whether hooks on compiled graphs traced without them were looked for
        #: (`hookscope.hooks.compiled.warn_stale`, once per session; a Monitor does its own).
        self.stale_checked = False

    # -- lifecycle -----------------------------------------------------------------

    @critical
    def __enter__(self) -> HookSession:
        if self._active:
            raise UsageError("this session is already active; create a new one to nest")
        self._guard.start()
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
        if setup_interrupted():  # `with` would not call __exit__
            self.close()
        return self

    @critical
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @critical
    def close(self) -> None:
        """Remove every hook this session added and restore PyTorch's side-effect flags.

        Runs to its end under Ctrl-C; the interrupt is raised afterwards.
        """
        if not self._active:
            return
        try:
            if self._bypass is not None:
                self._bypass.detach()
            for reg in self.registrations:
                if reg.handle is not None:
                    reg.handle.remove()
            self._effects.restore()
        finally:
            self._active = False
            _LIVE.discard(self)
            depth = _ACTIVE_DEPTH.get(id(self.model), 1) - 1
            if depth > 0:
                _ACTIVE_DEPTH[id(self.model)] = depth
            else:
                _ACTIVE_DEPTH.pop(id(self.model), None)
            self._guard.stop()

    @property
    def active(self) -> bool:
        """True between ``__enter__`` and ``__exit__``."""
        return self._active

    @property
    def probes_every_module(self) -> bool:
        """Whether the bypass probe sees every call of every module (`hookscope.hooks.observers`)."""
        return self._bypass is not None and self._bypass.every_module

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

    def add_model_hooks(self, pre: PreHook, post: PostHook) -> None:
        """Run ``pre`` before and ``post`` after every call of a module of the model.

        ``pre(name, module, args) -> None``;
        ``post(name, module, args, kwargs, output) -> None``, also when the
        forward raised (then ``kwargs`` and ``output`` are None). Two
        process-wide hooks whatever the model's size, where per-module hooks
        cost a registration each (or, with ``detect_bypass``, run by the
        bypass probes); they only observe (see `hookscope.hooks.modelwide`).
        """
        self._check_active()
        critical(add_model_hooks)(self, pre, post)

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
            lambda m, fn: self._effects.full_backward(
                m, m.register_full_backward_hook, fn, prepend
            ),
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
            lambda m, fn: self._effects.full_backward(
                m, m.register_full_backward_pre_hook, fn, prepend
            ),
        )

    @critical
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
        regs = []
        for names, tensor, slot in grad_targets(self.model, params):
            reg = self.record("grad", hook, names, tensor)
            self._effects.remember_tensor(tensor)
            wrapped = self._wrap(reg)
            reg.handle = tensor.register_post_accumulate_grad_hook(
                wrapped if slot is None else slot_hook(wrapped, slot)
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

    @critical
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
        if not selection and modules is not None:
            message = nothing_selected(self.model, modules, leaves_only=leaves_only)
            warnings.warn(f"{message}: no {kind} hook added", SelectionWarning, stacklevel=4)
        if not self.stale_checked:
            self.stale_checked = True
            warn_stale(self.model, "hookscope.session", eager=True, stacklevel=4)
        # one device counter per group, for the calls inside compiled graphs
        traced_calls = torch.zeros(len(selection), dtype=torch.int64) if self.count_traced else None
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
        if not self.keep_wrappers:
            reg.shown_name = self._clean_name(names[0], kind == "grad")
        self.registrations.append(reg)
        return reg

    def _clean_name(self, name: str, param: bool) -> str:
        """``name`` as in the unwrapped model (`hookscope.names`; the map is built once)."""
        module = name.rpartition(".")[0] if param else name
        if self._clean is None or module not in self._clean.names:  # new modules: map again
            self._clean = CleanNames(self.model)
        return self._clean.param(name) if param else self._clean.module(name)

    def _wrap(self, reg: Registration) -> Callable[..., Any]:
        return self._runner.wrap(reg)

    def count(self, reg: Registration) -> None:
        """Count one firing of ``reg`` (thread-safe)."""
        self._runner.count(reg)

    @property
    def count_lock(self) -> threading.Lock:
        """The lock `count` holds: a hook that counts inline holds it too."""
        return self._runner.lock

    def failed(self, reg: Registration, exc: Exception) -> None:
        """Apply the session's ``on_error`` policy to ``exc`` raised by ``reg``'s hook."""
        self._runner.failed(reg, exc)


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
    keep_wrappers: bool = False,
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
        keep_wrappers: hand hooks their names with wrapper components
            (``module.fc``, ``_orig_mod.fc``); by default a hook's ``name``
            is as in the unwrapped model (``fc``). Selectors match either.
    """
    return HookSession(
        model,
        on_error=on_error,
        detect_bypass=detect_bypass,
        bypass=bypass,
        bypass_modules=bypass_modules,
        keep_wrappers=keep_wrappers,
    )
