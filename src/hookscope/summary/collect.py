"""Run one forward with a module-call stack (hooks) and a `MacCounter` (dispatch).

The hooks come from a `hookscope.session`: a forward pre-hook on every module
opens a `CallRecord` (input shapes, depth, call number) and pushes it; a
forward hook records output shapes and bytes and pops it. When the forward
raises, an always-call forward hook notes the chain of calls still open at
the innermost module — `ForwardError` names them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from hookscope.errors import ForwardError
from hookscope.hooks import session
from hookscope.summary import opcache
from hookscope.summary.counter import CallRecord, MacCounter
from hookscope.summary.meta import meta_autocast
from hookscope.summary.swap import stand_ins

#: At most this many tensor shapes are recorded per module input or output.
MAX_SHAPES = 16


def iter_tensors(obj: Any) -> list[torch.Tensor]:
    """Tensors in nested tuples, lists and mappings (HF ``ModelOutput`` included), in order."""
    found: list[torch.Tensor] = []
    _gather(obj, found, 0)
    return found


def _gather(obj: Any, found: list[torch.Tensor], depth: int) -> None:
    # a list filled in place, no generators: it runs twice per module call
    if isinstance(obj, torch.Tensor):
        found.append(obj)
    elif depth < 6 and isinstance(obj, (list, tuple)):
        for item in obj:
            _gather(item, found, depth + 1)
    elif depth < 6 and isinstance(obj, Mapping):
        for item in obj.values():
            _gather(item, found, depth + 1)


def shapes_of(obj: Any) -> tuple[tuple[int, ...], ...]:
    """Shapes of the first `MAX_SHAPES` tensors in ``obj``."""
    return tuple([tuple(t.shape) for t in iter_tensors(obj)[:MAX_SHAPES]])


def bytes_of(obj: Any) -> int:
    """Bytes of every distinct tensor in ``obj``."""
    distinct = {id(t): t for t in iter_tensors(obj)}
    return sum(t.numel() * t.element_size() for t in distinct.values())


@dataclass
class Collected:
    """What one forward produced: every module call, the counter, the output."""

    records: list[CallRecord]
    counter: MacCounter
    output: Any
    #: qualified names of modules whose ``forward`` was called directly (no hooks ran)
    called_directly: tuple[str, ...] = ()


class _Recorder:
    """The pre/post hook pair and the stack they share with the counter."""

    def __init__(self) -> None:
        self.stack: list[CallRecord] = []
        self.records: list[CallRecord] = []
        self.calls: dict[int, int] = {}
        #: id(exception) -> (exception, the calls open when it left the innermost module)
        self.failures: dict[int, tuple[BaseException, list[CallRecord]]] = {}

    def pre(self, name: str, module: nn.Module, _args: Any) -> None:
        """Pre-hook ``(name, module, args) -> None``: open a call."""
        key = id(module)
        call = self.calls[key] = self.calls.get(key, 0) + 1
        # positional: (index, name, type_name, depth, module_id, call), once per module call
        record = CallRecord(
            len(self.records), name, type(module).__name__, len(self.stack), key, call
        )
        if self.stack:
            self.stack[-1].children.append(record)
        self.records.append(record)
        self.stack.append(record)

    def post(self, _name: str, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        """Post-hook ``(name, module, args, kwargs, output) -> None``: close the call.

        ``kwargs`` is None when the forward raised: PyTorch runs the hook
        inside its ``except`` block, and the first such call (innermost
        module) sees the whole chain still open.
        """
        record = self.stack[-1] if self.stack else None
        if record is None or record.module_id != id(module):
            return  # not opened by ``pre`` (hooks added mid-forward)
        self.stack.pop()
        if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor):
            record.input_shapes = (tuple(args[0].shape),)  # the common case, without a walk
        else:
            record.input_shapes = shapes_of((args, kwargs or {}))
        if kwargs is None:
            exc = sys.exc_info()[1]
            if exc is not None and id(exc) not in self.failures:
                self.failures[id(exc)] = (exc, [*self.stack, record])
            return
        if isinstance(output, torch.Tensor):
            record.output_shapes = (tuple(output.shape),)
            record.output_bytes = output.numel() * output.element_size()
        else:
            record.output_shapes = shapes_of(output)
            record.output_bytes = bytes_of(output)
        record.finished = True

    def failed(self, name: str, module: nn.Module, args: Any, _output: Any) -> None:
        """Per-module forward hook with ``always_call=True``: close a call whose forward raised.

        On success ``post`` already closed the call, and this finds it gone.
        """
        self.post(name, module, args, None, None)


def run_forward(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    device: torch.device,
) -> Collected:
    """Call ``model(*args, **kwargs)`` with its state stood in for on ``device``.

    See `hookscope.summary.swap.stand_ins`: the originals come back
    afterwards, also when the forward raises.

    Raises:
        ForwardError: the forward raised; the message names the module chain
            it raised in and the modules that had finished.
    """
    recorder = _Recorder()
    counter = MacCounter(recorder.stack, opcache.shared() if device.type == "meta" else None)
    with session(model, detect_bypass=True, bypass="record", keep_wrappers=True) as hooks:
        if device.type == "meta":
            hooks.add_model_hooks(recorder.pre, recorder.post)  # two hooks, whatever the size
        else:
            # Hooks on every module keep PyTorch's fused inference paths off
            # (TransformerEncoderLayer checks for them), so every submodule
            # runs and gets its row; no fused path runs on the meta device.
            hooks.add_forward_pre_hook(recorder.pre)
            hooks.add_forward_hook(recorder.post, with_kwargs=True)
            hooks.add_forward_hook(recorder.failed, always_call=True)
        try:
            with stand_ins(model, device), torch.no_grad(), counter, _no_ops(device):
                output = model(*args, **kwargs)
        except Exception as exc:
            raise ForwardError(_failure_message(model, recorder, exc)) from exc
    counter.add_up(recorder.records)
    direct = dict.fromkeys(name for record in hooks.bypasses for name in record.names)
    return Collected(recorder.records, counter, output, tuple(direct))


def _no_ops(device: torch.device) -> contextlib.AbstractContextManager[None]:
    return meta_autocast() if device.type == "meta" else contextlib.nullcontext()


def _failure_message(model: nn.Module, recorder: _Recorder, exc: Exception) -> str:
    _, stack = recorder.failures.get(id(exc), (exc, []))
    chain = " > ".join(r.name or f"(root {r.type_name})" for r in stack)
    where = stack[-1] if stack else None
    finished = [r.name for r in recorder.records if r.finished and r.name]
    ran = ", ".join(finished[-8:]) if finished else "none"
    more = f" (last 8 of {len(finished)})" if len(finished) > 8 else ""
    inside = (
        f" in {where.name or 'the root'} ({where.type_name}); call chain: {chain}" if where else ""
    )
    return (
        f"forward of {type(model).__name__} raised {type(exc).__name__}: {exc}{inside}; "
        f"modules that had run: {ran}{more}"
    )
