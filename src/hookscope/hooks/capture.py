"""Activation capture: detached copies of module outputs, by qualified name.

``capture`` opens a `hookscope.session` with one forward hook per selected
module. Each hook stores the module's output tensors, detached, under the
module's qualified name; nested outputs (tuples, lists, dicts, HuggingFace
``ModelOutput``) are stored per tensor under ``name/path`` keys, e.g.
``"lstm/0"`` and ``"lstm/1/0"`` for ``(output, (h, c))``. A module that runs
several times keeps its last output (``calls`` counts them all).

The memory budget is checked *before* copying, so an overflowing capture never
allocates past ``max_bytes``. The hook raises `CaptureOverflowError`; the
session reports it as a `HookError` inside the ``with`` body, and leaving the
``with`` block turns it back into the `CaptureOverflowError` it was.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

import torch
from torch import nn

from hookscope._interrupts import critical, setup_interrupted
from hookscope.errors import CaptureOverflowError, HookError, UsageError
from hookscope.hooks.selection import ModuleSelector, nothing_selected, select_modules
from hookscope.hooks.session import HookSession, session
from hookscope.names import CleanNames


def _format_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


def _tensors(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Yield ``(path, tensor)`` for every tensor in a nested output."""
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _tensors(item, (*path, str(key)))
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from _tensors(item, (*path, str(index)))


class ActivationCapture(Mapping[str, torch.Tensor]):
    """Captured activations, a read-only mapping ``key -> tensor``. Create with `capture`.

    Keys are qualified module names without wrapper components (``""`` is the
    root) or ``name/path`` for tensors inside nested outputs. Attributes: ``calls`` (how often each key
    was stored), ``nbytes`` (bytes held now), ``max_bytes`` (the budget).
    """

    def __init__(
        self,
        model: nn.Module,
        modules: ModuleSelector,
        *,
        leaves_only: bool,
        clone: bool,
        to: torch.device | None,
        max_bytes: int | None,
        keep: bool,
        keep_wrappers: bool = False,
    ) -> None:
        self.model = model
        self.keep_wrappers = keep_wrappers
        self._names: CleanNames | None = None
        self.modules = modules
        self.leaves_only = leaves_only
        self.clone = clone
        self.device = to
        self.max_bytes = max_bytes
        self.keep = keep
        self.calls: dict[str, int] = {}
        self.nbytes = 0
        self._store: dict[str, torch.Tensor] = {}
        self._session: HookSession | None = None
        self._released = False
        self._overflow: CaptureOverflowError | None = None
        self._lock = threading.Lock()

    # -- mapping -------------------------------------------------------------------

    def __getitem__(self, key: str) -> torch.Tensor:
        try:
            return self._store[key]
        except KeyError:
            if self._released:
                hint = "the capture was released on exit; pass keep=True to keep it"
            else:
                shown = ", ".join(repr(k) for k in list(self._store)[:8]) or "none yet"
                hint = f"captured keys: {shown}"
            raise KeyError(f"no activation captured for {key!r} ({hint})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def clear(self) -> None:
        """Drop every stored tensor (the hooks stay while the ``with`` block runs)."""
        self._store.clear()
        self.calls.clear()
        self.nbytes = 0

    # -- lifecycle -----------------------------------------------------------------

    @critical
    def __enter__(self) -> ActivationCapture:
        self._released = False
        self._overflow = None
        self._names = CleanNames(self.model, keep_wrappers=self.keep_wrappers)
        if not select_modules(self.model, self.modules, leaves_only=self.leaves_only):
            raise UsageError(
                nothing_selected(self.model, self.modules, leaves_only=self.leaves_only)
            )
        self._session = session(self.model, on_error="raise", keep_wrappers=True)
        self._session.__enter__()
        try:
            self._session.add_forward_hook(self._hook, self.modules, leaves_only=self.leaves_only)
        except BaseException:
            self._session.close()
            raise
        if setup_interrupted():  # `with` would not call __exit__
            self._session.close()
        return self

    @critical
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        if not self.keep:
            self.clear()
            self._released = True
        overflow = self._overflow
        if isinstance(exc, HookError) and overflow is not None and exc.__cause__ is overflow:
            raise overflow from None

    @property
    def selected(self) -> list[str]:
        """Names of the hooked modules, as the keys use them (while the ``with`` block runs)."""
        if self._session is None or self._names is None:
            return []
        names = self._names
        regs = self._session.registrations
        return [names.module(r.name) for r in regs if id(r.target()) not in names.wrappers]

    # -- the hook ------------------------------------------------------------------

    def _hook(self, name: str, module: nn.Module, args: Any, output: Any) -> None:
        names = self._names
        if names is not None:
            if id(module) in names.wrappers:
                return  # the module it wraps was stored under the same name
            name = names.module(name)
        for path, tensor in _tensors(output):
            key = "/".join((name, *path)) if path else name
            with self._lock:  # replicas (DataParallel) may call hooks from threads
                self._put(key, tensor)

    def _put(self, key: str, tensor: torch.Tensor) -> None:
        size = tensor.numel() * tensor.element_size()
        old = self._store.get(key)
        freed = 0 if old is None else old.numel() * old.element_size()
        if self.max_bytes is not None and self.nbytes - freed + size > self.max_bytes:
            self._overflow = CaptureOverflowError(
                f"capturing {key!r} ({_format_bytes(size)}, shape {tuple(tensor.shape)}, "
                f"{tensor.dtype}) would exceed max_bytes={self.max_bytes} "
                f"({_format_bytes(self.nbytes - freed)} already held by {len(self._store)} "
                "tensor(s)); select fewer modules, use a smaller batch or raise max_bytes"
            )
            raise self._overflow
        stored = tensor.detach()
        moved = stored if self.device is None else stored.to(self.device)
        if self.clone and moved is stored:
            # Same device: without a copy the stored tensor would alias the
            # module's output, and a later in-place op (ReLU(inplace=True))
            # would change what we "captured".
            moved = stored.clone()
        self._store[key] = moved
        self.nbytes += size - freed
        self.calls[key] = self.calls.get(key, 0) + 1


def capture(
    model: nn.Module,
    modules: ModuleSelector = None,
    *,
    leaves_only: bool = False,
    clone: bool = True,
    to: str | torch.device | None = "cpu",
    max_bytes: int | None = None,
    keep: bool = False,
    keep_wrappers: bool = False,
) -> ActivationCapture:
    """Capture detached outputs of selected modules while a ``with`` block runs.

    Example::

        with hookscope.capture(model, "features.*", keep=True) as cache:
            model(x)
        cache["features.0"].shape  # torch.Size([1, 16, 32, 32])

    Internally one forward hook per selected module, called by PyTorch as
    ``hook(module, args, output)`` (through a `hookscope.session`, which adds
    the qualified name); outputs of modules whose ``forward`` is called
    directly are not seen (run `hookscope.doctor` to find those).

    Args:
        model: the root module.
        modules: which modules (glob, type, predicate or a list; see
            `hookscope.hooks.ModuleSelector`); ``None`` selects every module.
        leaves_only: keep only selected modules without children.
        clone: copy outputs that stay on their device, so later in-place ops
            cannot change the stored values. ``clone=False`` stores a detached
            view that shares memory with the output.
        to: device to store on (default ``"cpu"``); ``None`` keeps each tensor
            on its own device.
        max_bytes: budget for all stored tensors together; exceeding it raises
            `CaptureOverflowError` naming the key, its size and the budget.
        keep: keep the tensors after the ``with`` block (default: released).
        keep_wrappers: key by the names as the wrapped model has them
            (``module.fc``, ``_orig_mod.fc``, ``_fsdp_wrapped_module.fc``) and
            capture wrappers too; by default keys match the unwrapped model
            (see `hookscope.names`) and a wrapper's output, the same as the
            module it holds, is stored once.

    Returns:
        An `ActivationCapture` to use as a context manager.

    Raises:
        UsageError: a bad ``max_bytes``, ``to`` or selector value.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"capture() needs an nn.Module, got {type(model).__name__}")
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
    ):
        raise UsageError(f"max_bytes must be a non-negative int or None, got {max_bytes!r}")
    try:
        device = None if to is None else torch.device(to)
    except (RuntimeError, TypeError) as exc:
        raise UsageError(f"to= must be a device like 'cpu' or None, got {to!r}") from exc
    return ActivationCapture(
        model,
        modules,
        leaves_only=leaves_only,
        clone=clone,
        to=device,
        max_bytes=max_bytes,
        keep=keep,
        keep_wrappers=keep_wrappers,
    )
