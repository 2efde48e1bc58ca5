"""Hooks that are not per-module registrations: tensor grad hooks and global module hooks.

* `TensorGradHooks` puts gradient hooks on tensors (a module's outputs or
  inputs, seen in a forward hook) on behalf of a `HookSession`: they count
  towards the session's ``fired``, follow its ``on_error`` policy, and those
  still registered are removed by `TensorGradHooks.remove`. Unlike full
  backward hooks they do not wrap outputs in ``BackwardHookFunction``, so an
  in-place op on a module's output later (``nn.ReLU(inplace=True)``) does not
  break them: a hook added before an in-place op receives the gradient of the
  value before it.
* `global_module_hooks` installs process-wide forward pre-hooks
  (``register_module_forward_pre_hook``) for as long as a ``with`` block runs;
  ``hookscope run --monitor`` uses it to find the models a script calls.
* `global_optimizer_step_hooks` installs a process-wide optimizer step
  post-hook (``register_optimizer_step_post_hook``) the same way; ``hookscope
  run --monitor`` closes one step per optimizer step with it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.hooks import RemovableHandle

from hookscope._interrupts import critical_contextmanager
from hookscope.errors import HookWarning
from hookscope.hooks.handles import Registration
from hookscope.hooks.session import HookSession


class TensorGradHooks:
    """Tensor gradient hooks owned by one session.

    Args:
        session: an active session; failures follow its ``on_error`` policy.
    """

    def __init__(self, session: HookSession) -> None:
        self.session = session
        self._handles: list[RemovableHandle] = []

    def registration(
        self, names: tuple[str, ...], module: nn.Module, hook: Callable[..., Any]
    ) -> Registration:
        """Create the session record (kind ``"backward"``) under which a module's tensor hooks count."""
        return self.session.record("backward", hook, names, module)

    def add(
        self, reg: Registration, tensor: torch.Tensor, fn: Callable[[torch.Tensor], Any]
    ) -> None:
        """Call ``fn(grad)`` when the gradient w.r.t. ``tensor`` is computed.

        ``fn``'s return value is ignored (the gradient is never replaced). An
        exception in ``fn`` is handled by the session's policy and attributed
        to ``reg``.
        """
        session = self.session

        def tensor_hook(grad: torch.Tensor) -> None:
            if reg.disabled:
                return
            session.count(reg)
            try:
                fn(grad)
            except Exception as exc:
                session.failed(reg, exc)

        self._handles.append(tensor.register_hook(tensor_hook))

    def prune(self) -> None:
        """Forget handles whose tensors (and graphs) are gone."""
        self._handles = [h for h in self._handles if h.hooks_dict_ref() is not None]

    def remove(self) -> None:
        """Remove every tensor hook still registered."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """``fn`` with its exceptions swallowed: the first one as a `HookWarning`."""
    warned = False

    @functools.wraps(fn)  # hook inventories and the doctor show fn's name
    def hook(*args: Any) -> None:
        nonlocal warned
        try:
            fn(*args)
        except Exception as exc:
            if not warned:
                warned = True
                warnings.warn(
                    f"global hook {getattr(fn, '__qualname__', fn)!r} raised "
                    f"{type(exc).__name__}: {exc} (ignored)",
                    HookWarning,
                    stacklevel=2,
                )

    return hook


@critical_contextmanager
def global_module_hooks(pre: Callable[[nn.Module, tuple[Any, ...]], None]) -> Iterator[None]:
    """Call ``pre(module, args)`` before every module call in the process, inside the block.

    Exceptions in ``pre`` never stop the module call: the first one is reported
    as a `HookWarning`, later ones are ignored. The hook is removed on exit.
    """
    handle = torch.nn.modules.module.register_module_forward_pre_hook(_guarded(pre))
    try:
        yield
    finally:
        handle.remove()


@critical_contextmanager
def global_optimizer_step_hooks(
    post: Callable[[torch.optim.Optimizer, tuple[Any, ...], dict[str, Any]], None],
) -> Iterator[None]:
    """Call ``post(optimizer, args, kwargs)`` after every optimizer step in the process.

    Every ``torch.optim.Optimizer`` (and subclass) step counts, inside the
    block. Exceptions in ``post`` never stop training: the first one is
    reported as a `HookWarning`, later ones are ignored. Removed on exit.
    """
    handle = register_optimizer_step_post_hook(_guarded(post))
    try:
        yield
    finally:
        handle.remove()
