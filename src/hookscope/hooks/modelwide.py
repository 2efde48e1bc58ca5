"""Forward hooks on every module of a model through one process-wide pair.

Per-module hooks cost a registration each (three hooks on 300 modules is
900 of them, about 10 µs each with the session's records), which is most of
a quick tool's time on a small model. `add_model_hooks` registers one global
forward pre-hook and one global forward hook (``always_call``) instead and
maps each call back to the module's name; calls of modules outside the model
are skipped. When the session's bypass detector has a probe on every module
of the model, the probes run the pair instead (`hookscope.hooks.observers`):
no global hook, so every module call keeps PyTorch's fast path; ``pre`` then
runs after the module's own forward pre-hooks.

What differs from per-module hooks: global hooks run *before* the module's
own hooks, so ``post`` sees the output as the module's ``forward`` returned
it, before forward hooks replace it; ``pre`` sees the arguments before
forward pre-hooks replace them (``post`` gets them after). Return values are
ignored: these hooks observe, never change.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import nn

from hookscope.hooks.handles import HookKind, Registration
from hookscope.hooks.observers import observe_post, observe_pre
from hookscope.hooks.selection import module_names

#: ``pre(name, module, args) -> None``
PreHook = Callable[[str, nn.Module, tuple[Any, ...]], None]
#: ``post(name, module, args, kwargs, output) -> None``; ``kwargs`` and ``output``
#: are None when the forward raised.
PostHook = Callable[[str, nn.Module, tuple[Any, ...], dict[str, Any] | None, Any], None]


class HookOwner(Protocol):
    """What `add_model_hooks` needs of a `hookscope.hooks.session.HookSession`."""

    model: nn.Module

    @property
    def count_lock(self) -> threading.Lock: ...

    @property
    def probes_every_module(self) -> bool: ...

    def record(
        self, kind: HookKind, hook: Callable[..., Any], names: tuple[str, ...], target: Any
    ) -> Registration: ...

    def failed(self, reg: Registration, exc: Exception) -> None: ...


def add_model_hooks(session: HookOwner, pre: PreHook, post: PostHook) -> None:
    """Call ``pre`` before and ``post`` after every call of a module of ``session.model``.

    ``post`` runs also when the forward raised (then inside PyTorch's
    ``except``: ``sys.exc_info()`` holds the error). Both count in the
    session's ``fired`` under the model's root name and follow its
    ``on_error`` policy; the session removes them on close.
    """
    names = {key: aliases[0] for key, aliases in module_names(session.model).items()}
    pre_reg = session.record("forward_pre", pre, ("",), session.model)
    post_reg = session.record("forward", post, ("",), session.model)
    lock = session.count_lock  # counted inline: this runs on every module call

    def pre_hook(module: nn.Module, args: tuple[Any, ...]) -> None:
        name = names.get(id(module))
        if name is not None and not pre_reg.disabled:
            with lock:
                pre_reg.count += 1
            try:
                pre(name, module, args)
            except Exception as exc:
                session.failed(pre_reg, exc)

    def post_hook(module: nn.Module, args: tuple[Any, ...], *rest: Any) -> None:
        # (kwargs, output) after a forward; (output=None,) when it raised
        name = names.get(id(module))
        if name is not None and not post_reg.disabled:
            kwargs, output = rest if len(rest) == 2 else (None, None)
            with lock:
                post_reg.count += 1
            try:
                post(name, module, args, kwargs, output)
            except Exception as exc:
                session.failed(post_reg, exc)

    if session.probes_every_module:  # the probes run them: module calls keep the fast path
        pre_reg.handle = observe_pre(pre_hook)
        post_reg.handle = observe_post(post_hook)
        return
    hooks = torch.nn.modules.module
    pre_reg.handle = hooks.register_module_forward_pre_hook(pre_hook)
    post_reg.handle = handle = hooks.register_module_forward_hook(
        post_hook, with_kwargs=True, always_call=True
    )
    # torch 2.13's handle forgets the with_kwargs flag on remove; left behind,
    # it makes every later torch.compile(module) warn about global hooks
    flags = getattr(hooks, "_global_forward_hooks_with_kwargs", None)
    if flags is not None and all(ref() is not flags for ref in handle.extra_dict_ref):
        handle.extra_dict_ref = (*handle.extra_dict_ref, weakref.ref(flags))
