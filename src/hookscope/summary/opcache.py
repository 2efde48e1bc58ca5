"""Reusing meta-kernel results: the same op on the same shapes runs once per process.

On the meta device most of a summary's time goes to PyTorch's meta kernels,
many of them Python decompositions (``batch_norm``, elementwise ops through
``torch._refs``: about 1-20 ms each on a busy 2-core CPU). A model repeats
the same op on the same shapes many times (every block of a ResNet stage,
every layer of a transformer), and a meta kernel's output depends only on
its inputs' metadata and the other arguments. `OpCache` keys an op by those
and, on a repeat, makes fresh outputs of the recorded shape, strides and
dtype with ``torch.empty_strided``.

Only ops whose schema makes fresh outputs are cached: no output aliases an
input (views, in-place ops, ``out=`` variants). An op that also writes to an
argument it does not return (``native_batch_norm``'s running statistics) is
cached too: every argument is a meta tensor, whose data does not exist.
Arguments of unknown types (and tensors on other devices) are not keyed:
the kernel runs. The default dtype is part of
the key (factory ops without a ``dtype`` use it).

Every summary on the meta device shares one cache (`shared`), so the second
summary of a model, and a model whose blocks another model also had, skips
the kernels; it keeps at most `MAX_ENTRIES` keys, the oldest go first.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hookscope.summary.shapes import RULES, Outputs, Spec

_META = torch.device("meta")
_PLAIN = (
    int,
    float,
    bool,
    str,
    type(None),
    torch.dtype,
    torch.device,
    torch.memory_format,
    torch.layout,
)

_PLAIN_TYPES = frozenset(_PLAIN)
_TENSORS = frozenset((torch.Tensor, nn.Parameter))

#: Keys a cache holds at most (each a few hundred bytes).
MAX_ENTRIES = 50_000


class _Unkeyable(Exception):
    pass


class OpCache:
    """Outputs' metadata of the meta ops run so far, by op and argument metadata."""

    def __init__(self) -> None:
        self._specs: dict[tuple[Any, ...], Spec | Outputs] = {}
        self._fresh: dict[Any, bool] = {}

    def run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``func(*args, **kwargs)``, or fresh meta tensors like its earlier result."""
        fresh = self._fresh.get(func)
        if fresh is None:
            fresh = self._fresh[func] = _makes_fresh_tensors(func)
        if not fresh:
            return func(*args, **kwargs)
        try:
            kwargs_key = _key(tuple(sorted(kwargs.items()))) if kwargs else ()
            key = (func, _key_items(args), kwargs_key, torch.get_default_dtype())
        except _Unkeyable:
            return func(*args, **kwargs)
        spec = self._specs.get(key)
        if spec is None:
            rule = RULES.get(func)
            spec = None if rule is None else rule(args, kwargs)
            if spec is not None:
                self._remember(key, spec)
        if spec is None:
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor) and out.is_meta:
                self._remember(key, _spec(out))
            elif isinstance(out, tuple) and all(
                isinstance(t, torch.Tensor) and t.is_meta for t in out
            ):
                self._remember(key, Outputs(_spec(t) for t in out))
            return out
        if isinstance(spec, Outputs):
            return tuple([_make(s) for s in spec])
        return _make(spec)

    def _remember(self, key: tuple[Any, ...], spec: Spec | Outputs) -> None:
        if len(self._specs) >= MAX_ENTRIES:
            del self._specs[next(iter(self._specs))]
        self._specs[key] = spec


_SHARED = OpCache()


def shared() -> OpCache:
    """The cache every summary on the meta device uses."""
    return _SHARED


def _makes_fresh_tensors(func: Any) -> bool:
    schema = getattr(func, "_schema", None)
    if schema is None or not schema.returns:
        return False
    return not any(r.alias_info is not None or str(r.type) != "Tensor" for r in schema.returns)


def _key_items(values: tuple[Any, ...] | list[Any]) -> tuple[Any, ...]:
    """Keys of an op's arguments: ints and None stand for themselves (nothing else equals them)."""
    keys: list[Any] = []
    for value in values:
        kind = type(value)
        if kind is int or value is None:
            keys.append(value)
        elif kind in _TENSORS:
            if not value.is_meta:
                raise _Unkeyable
            keys.append((value.shape, value.stride(), value.dtype, value.storage_offset()))
        else:
            keys.append(_key(value))
    return tuple(keys)


def _key(value: Any) -> Any:
    kind = type(value)  # exact types first: this runs for every argument of every op
    if kind in _PLAIN_TYPES:
        return (kind, value)
    if kind is tuple or kind is list:
        return (kind, *_key_items(value))
    if isinstance(value, torch.Tensor):
        if not value.is_meta:
            raise _Unkeyable
        return (value.shape, value.stride(), value.dtype, value.storage_offset())
    if isinstance(value, (tuple, list)):
        return (kind, *_key_items(value))
    if isinstance(value, _PLAIN):
        return (kind, value)
    raise _Unkeyable


def _spec(t: torch.Tensor) -> Spec:
    return tuple(t.shape), t.stride(), t.dtype


def _make(spec: Spec) -> torch.Tensor:
    shape, stride, dtype = spec
    return torch.empty_strided(shape, stride, dtype=dtype, device=_META)
