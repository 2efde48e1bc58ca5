"""Reusing meta-kernel results within one summary: the same op on the same shapes runs once.

On the meta device most of a summary's time goes to PyTorch's meta kernels,
many of them Python decompositions (``batch_norm``, elementwise ops through
``torch._refs``: about 1-20 ms each on a busy 2-core CPU). A model repeats
the same op on the same shapes many times (every block of a ResNet stage,
every layer of a transformer), and a meta kernel's output depends only on
its inputs' metadata and the other arguments. `OpCache` keys an op by those
and, on a repeat, makes fresh outputs of the recorded shape, strides and
dtype with ``torch.empty_strided``.

Only ops whose schema makes fresh outputs are cached: no output aliases an
input (views, in-place ops) and no argument is written to. Arguments of
unknown types are not keyed: the kernel runs.
"""

from __future__ import annotations

from typing import Any

import torch

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

Spec = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]


class _Unkeyable(Exception):
    pass


class OpCache:
    """Outputs' metadata of the meta ops run so far, by op and argument metadata."""

    def __init__(self) -> None:
        self._specs: dict[tuple[Any, ...], Spec | tuple[Spec, ...]] = {}
        self._fresh: dict[Any, bool] = {}

    def run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``func(*args, **kwargs)``, or fresh meta tensors like its earlier result."""
        fresh = self._fresh.get(func)
        if fresh is None:
            fresh = self._fresh[func] = _makes_fresh_tensors(func)
        if not fresh:
            return func(*args, **kwargs)
        try:
            key = (func, _key(args), _key(tuple(sorted(kwargs.items()))))
        except _Unkeyable:
            return func(*args, **kwargs)
        spec = self._specs.get(key)
        if spec is None:
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor) and out.is_meta:
                self._specs[key] = _spec(out)
            elif isinstance(out, tuple) and all(
                isinstance(t, torch.Tensor) and t.is_meta for t in out
            ):
                self._specs[key] = tuple(_spec(t) for t in out)
            return out
        if isinstance(spec[2], torch.dtype):
            return _make(spec)
        return tuple(_make(s) for s in spec)


def _makes_fresh_tensors(func: Any) -> bool:
    schema = getattr(func, "_schema", None)
    if schema is None or not schema.returns:
        return False
    if any(r.alias_info is not None or str(r.type) != "Tensor" for r in schema.returns):
        return False
    return not any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _key(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        if not value.is_meta:
            raise _Unkeyable
        return (tuple(value.shape), value.stride(), value.dtype, value.storage_offset())
    if isinstance(value, (tuple, list)):
        return (type(value), *(_key(v) for v in value))
    if isinstance(value, _PLAIN):
        return (type(value), value)
    raise _Unkeyable


def _spec(t: torch.Tensor) -> Spec:
    return tuple(t.shape), t.stride(), t.dtype


def _make(spec: Spec) -> torch.Tensor:
    shape, stride, dtype = spec
    return torch.empty_strided(shape, stride, dtype=dtype, device=_META)
