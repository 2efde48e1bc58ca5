"""Finding the tensors inside a module's inputs or outputs, with readable paths.

Walks tensors, tuples, lists, dicts, dataclasses and HuggingFace ``ModelOutput``
(a dataclass that is also a dict). Paths read like Python: ``output``,
``output[0]``, ``output.logits``, ``output['hidden']``. ``None`` fields and
values of other types are skipped; nesting deeper than `MAX_DEPTH` is not
followed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

#: How deep nested containers are followed.
MAX_DEPTH = 6
#: ``prefix -> prefix[0]``, the path of a lone argument.
_FIRST: dict[str, str] = {}


def tensors_in(obj: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """Every tensor in ``obj`` with its path, in a stable order.

    Args:
        obj: a tensor or a (nested) tuple, list, dict, dataclass or ``ModelOutput``.
        prefix: the path of ``obj`` itself, e.g. ``"output"`` or ``"input"``.

    Returns:
        ``(path, tensor)`` pairs; a bare tensor gives ``[(prefix, obj)]``.
    """
    if isinstance(obj, torch.Tensor):
        return [(prefix, obj)]
    if type(obj) is tuple and len(obj) == 1 and isinstance(obj[0], torch.Tensor):
        first = _FIRST.get(prefix)  # a module's usual arguments: one tensor
        if first is None:
            first = _FIRST[prefix] = f"{prefix}[0]"
        return [(first, obj[0])]
    found: list[tuple[str, torch.Tensor]] = []
    _walk(obj, prefix, 0, found)
    return found


def _walk(obj: Any, path: str, depth: int, found: list[tuple[str, torch.Tensor]]) -> None:
    if isinstance(obj, torch.Tensor):
        found.append((path, obj))
        return
    if depth >= MAX_DEPTH or obj is None:
        return
    if type(obj) is tuple or type(obj) is list:  # the common case first (no dataclass check)
        for index, value in enumerate(obj):
            _walk(value, f"{path}[{index}]", depth + 1, found)
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # ModelOutput is both a dataclass and a dict: attribute paths read better.
        for field in dataclasses.fields(obj):
            value = getattr(obj, field.name, None)
            if value is not None:
                _walk(value, f"{path}.{field.name}", depth + 1, found)
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            _walk(value, f"{path}[{key!r}]", depth + 1, found)
        return
    if isinstance(obj, (tuple, list)):
        for index, value in enumerate(obj):
            _walk(value, f"{path}[{index}]", depth + 1, found)
