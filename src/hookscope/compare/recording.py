"""A recording: what every module of one run received and produced, in call order.

A `Recording` is the common currency of `hookscope.compare`: a run of a live
model is recorded into one, and one saved by `hookscope.record` (or written by
another tool in the same format) is read back into one.

File format (one ``.safetensors`` file):

* every tensor is a safetensors entry; the key is free-form (hookscope writes
  ``"{call:06d}/{kind}/{path}"``);
* the header metadata holds one entry, ``"hookscope"``, a JSON string::

    {"format": "hookscope-recording", "version": 1,
     "torch": "2.13.0", "device": "cpu", "model": "GPT2LMHeadModel",
     "inputs": [{"path": "args/0", "key": "input/args/0", "shape": [1, 128], "dtype": "int64"}],
     "calls": [{"name": "transformer.wte", "call": 0, "start": 2, "type": "Embedding",
                "inputs": [...], "outputs": [...], "grads": [...]}]}

  ``calls`` are in completion order (a module after its children); ``name``
  is the module's qualified name without wrapper prefixes, ``call`` counts the
  calls of that name from 0, ``start`` is the call's position in start order.
  ``inputs`` paths are ``args/N`` and ``kwargs/NAME`` (nested:
  ``args/0/1``); ``outputs`` and ``grads`` (gradient w.r.t. each output) use
  the path inside the output (``""`` for a lone tensor, ``"0"``,
  ``"logits"``). The top-level ``inputs`` are the model's own inputs.

A file is refused (`UsageError`) when its ``version`` is not one this
hookscope reads, or when a call's ``name`` cannot be a module's qualified
name (an empty component as in ``"a..b"``, a path separator, markup or
control characters, ``#``) or its ``call``/``start`` is not an int >= 0.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hookscope.errors import MissingExtraError, UsageError, require_extra

FORMAT = "hookscope-recording"
VERSION = 1

#: One component of a qualified module name as a recording may hold: no ``.``
#: (the separator), no path separators, markup, ``#`` (labels use it) or
#: control characters. ``torch`` allows more; no module path needs it.
_COMPONENT = re.compile(r"[^./\\<>&\"'#\x00-\x1f\x7f]+")

#: Default byte budget of `hookscope.record`: 1 GiB.
DEFAULT_MAX_BYTES = 1 << 30

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class CallRecord:
    """One call of one module.

    Attributes:
        name: qualified name without wrapper prefixes (``""`` is the root).
        call: which call of this name, from 0.
        start: position of the call in start order (the root is 0).
        type: the module's class name.
        inputs: ``path -> tensor`` for tensors in ``args`` / ``kwargs``.
        outputs: ``path -> tensor`` for tensors in the output.
        grads: ``path -> gradient w.r.t. that output`` (filled by a backward).
    """

    name: str
    call: int
    start: int
    type: str
    inputs: Tensors = field(default_factory=dict)
    outputs: Tensors = field(default_factory=dict)
    grads: Tensors = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``name`` with ``#call`` for calls after the first; the root is ``(root)``."""
        base = self.name or "(root)"
        return base if self.call == 0 else f"{base}#{self.call}"


@dataclass(frozen=True)
class Recording:
    """Module calls of one run, in completion order, with the run's inputs.

    Attributes:
        calls: one `CallRecord` per module call.
        inputs: the model's own inputs, ``path -> tensor``.
        meta: ``torch`` version, ``device``, ``model`` class name.
    """

    calls: tuple[CallRecord, ...]
    inputs: Tensors
    meta: Mapping[str, Any]

    @property
    def nbytes(self) -> int:
        """Bytes held by the recording's tensors (each counted once)."""
        unique = {id(t): t for _, t in self._tensors()}
        return sum(t.numel() * t.element_size() for t in unique.values())

    def _tensors(self) -> Iterator[tuple[str, torch.Tensor]]:
        for path, tensor in self.inputs.items():
            yield f"input/{path}", tensor
        for index, rec in enumerate(self.calls):
            for kind, group in (("in", rec.inputs), ("out", rec.outputs), ("grad", rec.grads)):
                for path, tensor in group.items():
                    yield f"{index:06d}/{kind}/{path}", tensor

    def save(self, path: str | Path) -> Path:
        """Write the recording as one safetensors file (atomically: a temp file, then rename)."""
        st = _safetensors()
        target = Path(path)
        keys: dict[int, str] = {}
        tensors: Tensors = {}
        for key, tensor in self._tensors():
            if id(tensor) not in keys:  # one tensor in two places is stored once
                keys[id(tensor)] = key
                tensors[key] = tensor.detach().to("cpu").contiguous()

        def entries(group: Tensors) -> list[dict[str, Any]]:
            return [
                {"path": p, "key": keys[id(t)], "shape": list(t.shape), "dtype": _dtype_name(t)}
                for p, t in group.items()
            ]

        index = {
            "format": FORMAT,
            "version": VERSION,
            **dict(self.meta),
            "inputs": entries(self.inputs),
            "calls": [
                {
                    "name": rec.name,
                    "call": rec.call,
                    "start": rec.start,
                    "type": rec.type,
                    "inputs": entries(rec.inputs),
                    "outputs": entries(rec.outputs),
                    "grads": entries(rec.grads),
                }
                for rec in self.calls
            ],
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            st.save_file(tensors, str(tmp), metadata={"hookscope": json.dumps(index)})
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return target


def _dtype_name(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _safetensors() -> Any:
    return require_extra("safetensors.torch", "compare")


def load_recording(path: str | Path) -> Recording:
    """Read a recording written by `Recording.save` or by another tool in the same format.

    Raises:
        UsageError: the file is missing, not safetensors, or its index is
            missing or inconsistent (the message says which).
    """
    source = Path(path)
    if not source.is_file():
        raise UsageError(f"recording not found: {source}")
    st = _safetensors()
    try:
        tensors = st.load_file(str(source))
        with st.safe_open(str(source), framework="pt") as handle:
            metadata = handle.metadata() or {}
    except MissingExtraError:
        raise
    except Exception as exc:
        raise UsageError(
            f"{source} is not a safetensors file ({type(exc).__name__}: {exc})"
        ) from None
    try:
        index = json.loads(metadata["hookscope"])
    except KeyError:
        raise UsageError(f"{source} has no 'hookscope' index in its metadata") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}: the 'hookscope' index is not JSON ({exc.msg})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise UsageError(f"{source}: index format is not {FORMAT!r}")
    version = index.get("version")
    if type(version) is not int or version != VERSION:
        raise UsageError(
            f"{source}: recording version {version!r} is not supported "
            f"(this hookscope reads version {VERSION}; a newer hookscope may read it)"
        )
    try:
        return _from_index(index, tensors)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{source}: bad recording index ({type(exc).__name__}: {exc})") from None


def _from_index(index: dict[str, Any], tensors: Tensors) -> Recording:
    def group(entries: list[dict[str, Any]]) -> Tensors:
        out: Tensors = {}
        for entry in entries:
            tensor = tensors[entry["key"]]
            if "shape" in entry and list(tensor.shape) != list(entry["shape"]):
                raise ValueError(
                    f"{entry['key']!r} has shape {list(tensor.shape)}, index says {entry['shape']}"
                )
            out[str(entry["path"])] = tensor
        return out

    calls = tuple(
        CallRecord(
            name=_module_name(c["name"]),
            call=_count("call", c["call"], c["name"]),
            start=_count("start", c.get("start", i), c["name"]),
            type=str(c.get("type", "")),
            inputs=group(c.get("inputs", [])),
            outputs=group(c.get("outputs", [])),
            grads=group(c.get("grads", [])),
        )
        for i, c in enumerate(index["calls"])
    )
    skip = {"format", "version", "inputs", "calls"}
    meta = {k: v for k, v in index.items() if k not in skip}
    return Recording(calls, group(index.get("inputs", [])), meta)


def _module_name(name: object) -> str:
    """``name`` if it can be a qualified module name (``""`` is the root), else ValueError."""
    if not isinstance(name, str):
        raise ValueError(f"call name {name!r} is not a string")
    if name and not all(_COMPONENT.fullmatch(part) for part in name.split(".")):
        raise ValueError(
            f"call name {name!r} cannot be a module's qualified name "
            "(dot-separated names without '/', '\\', '<', '>', '&', quotes, '#' or empty parts)"
        )
    return name


def _count(what: str, value: object, name: object) -> int:
    """``value`` if it is an int >= 0, else ValueError naming the call."""
    if type(value) is not int or value < 0:
        raise ValueError(f"call {name!r} has {what}={value!r}; it must be an int >= 0")
    return value
