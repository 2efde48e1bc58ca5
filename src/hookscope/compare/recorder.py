"""Recording one run of a model through a `hookscope.session` (no hook of its own).

Hooks used, on every module except wrappers (``torch.compile``'s
``OptimizedModule``, DDP, FSDP1, checkpoint wrappers), all through the session:

* forward pre-hook ``(name, module, args, kwargs) -> (args, kwargs) | None``:
  numbers the call and, when inputs are wanted, copies the tensors in
  ``args``/``kwargs``; in teacher-forcing mode (`Teacher`) it returns the
  reference run's inputs of the same call instead of the module's own.
* forward hook ``(name, module, args, output)``: copies the output tensors
  and, with ``grads=True``, puts a tensor gradient hook on each output that
  requires grad (`hookscope.hooks.globals.TensorGradHooks`).

Copies are detached, on the CPU, made before anything else can change them
in place (``ReLU(inplace=True)``), and counted against ``max_bytes`` before
they are made.

``traced=True`` (a ``torch.compile``d side, forward only, no teacher): the
hooks are traced into the model's graph instead, so the whole model is
compiled once. Each hook appends a clone of the tensors to an event list
(a side effect dynamo replays after the graph ran); `Recorder.finish` turns
the events into calls and copies them to the CPU, counting ``max_bytes``
then. The default path breaks the graph at every module: each module's code
is compiled on its own (79 graphs for a 2-layer GPT-2 instead of 2).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from hookscope.compare.recording import CallRecord, Recording, Tensors
from hookscope.errors import CaptureOverflowError
from hookscope.hooks.globals import TensorGradHooks
from hookscope.hooks.session import HookSession
from hookscope.names import clean_names, is_wrapper

#: ``teacher(clean name, call index, start index) -> reference call or None``
Teacher = Callable[[str, int, int], CallRecord | None]


def flatten(value: Any, path: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """Yield ``(path, tensor)`` for every tensor in a nested value (``"0/1"``, ``"logits"``)."""
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from flatten(item, f"{path}/{key}" if path else str(key))
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            yield from flatten(item, f"{path}/{index}" if path else str(index))


def call_inputs(
    args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> Iterator[tuple[str, torch.Tensor]]:
    """``(path, tensor)`` for the tensors of one call: ``args/N...`` and ``kwargs/NAME...``."""
    yield from flatten(list(args), "args")
    yield from flatten(dict(kwargs), "kwargs")


def substitute(value: Any, path: str, teacher: Tensors, *, keep_dtype: bool) -> Any:
    """``value`` with every floating tensor at a path in ``teacher`` replaced by a copy.

    The copy goes to the device of the tensor it replaces and, unless
    ``keep_dtype``, takes its dtype too. A tensor whose shape differs from the
    teacher's is left alone.
    """
    if isinstance(value, torch.Tensor):
        new = teacher.get(path)
        if new is None or not value.is_floating_point() or new.shape != value.shape:
            return value
        dtype = new.dtype if keep_dtype else value.dtype
        return new.to(device=value.device, dtype=dtype, copy=True)
    if isinstance(value, Mapping):
        items = {
            k: substitute(v, f"{path}/{k}", teacher, keep_dtype=keep_dtype)
            for k, v in value.items()
        }
        return items if type(value) is dict else value
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
        return type(value)(
            substitute(v, f"{path}/{i}", teacher, keep_dtype=keep_dtype)
            for i, v in enumerate(value)
        )
    return value


class Recorder:
    """Records module calls of ``model`` while an active ``session`` runs it.

    Args:
        session: an active session on ``model``.
        inputs: also copy every module's inputs (needed for teacher forcing
            and for saved recordings).
        grads: copy the gradient w.r.t. every output during a backward.
        max_bytes: budget for all copies; exceeding it raises
            `CaptureOverflowError` naming the tensor.
        teacher: feed each module the reference's inputs of the matching call.
        keep_dtype: feed them in the reference's dtype (under autocast, where
            each op picks its own precision) instead of the dtype of the
            module's own input (a model cast to bf16 needs bf16 inputs).
    """

    def __init__(
        self,
        session: HookSession,
        *,
        inputs: bool,
        grads: bool,
        max_bytes: int | None,
        teacher: Teacher | None = None,
        keep_dtype: bool = False,
        traced: bool = False,
    ) -> None:
        self.model = session.model
        self.inputs = inputs
        self.grads = grads
        self.max_bytes = max_bytes
        self.teacher = teacher
        self.keep_dtype = keep_dtype
        self.calls: list[CallRecord] = []
        self.forced: set[int] = set()
        self.nbytes = 0
        self._names = clean_names(self.model)
        self._counts: dict[str, int] = {}
        self._open: dict[str, list[CallRecord]] = {}
        self._grad_hooks = TensorGradHooks(session) if grads else None
        self._starts = 0
        self._root_inputs: Tensors = {}
        self._outputs: dict[int, tuple[weakref.ref[torch.Tensor], int, torch.Tensor]] = {}
        #: ``(raw name, module type, is a pre-hook, (path, clone) pairs)`` (``traced=True``).
        self._events: list[tuple[str, str, bool, list[tuple[str, torch.Tensor]]]] = []
        if traced:
            session.count_traced = False  # no in-graph call counters: compile time
            session.add_forward_pre_hook(self._trace_pre, self._selected, with_kwargs=True)
            session.add_forward_hook(self._trace_post, self._selected)
            return
        # Under torch.compile the hooks run eagerly at a graph break of their
        # own: traced, their bookkeeping (call counters, copies to the CPU)
        # would be guarded on and recompile the graph at every call.
        selector = self._selected
        session.add_forward_pre_hook(torch.compiler.disable(self._pre), selector, with_kwargs=True)
        session.add_forward_hook(torch.compiler.disable(self._post), selector)

    def _selected(self, name: str, module: nn.Module) -> bool:
        return not is_wrapper(module)

    def recording(self) -> Recording:
        """What was recorded, in completion order."""
        meta = {"torch": torch.__version__, "device": _device_of(self.model)}
        meta["model"] = type(self.model).__name__
        return Recording(tuple(self.calls), dict(self._root_inputs), meta)

    def close(self) -> None:
        """Remove the tensor gradient hooks still registered."""
        if self._grad_hooks is not None:
            self._grad_hooks.remove()

    # -- hooks -----------------------------------------------------------------------

    def _pre(
        self, raw: str, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        name = self._names.get(raw, raw)
        call = self._counts.get(name, 0)
        self._counts[name] = call + 1
        record = CallRecord(name, call, self._starts, type(module).__name__)
        self._starts += 1
        self._open.setdefault(name, []).append(record)
        replaced = None
        reference = self.teacher(name, call, record.start) if self.teacher is not None else None
        if reference is not None and reference.inputs:
            keep = self.keep_dtype
            new_args = substitute(list(args), "args", reference.inputs, keep_dtype=keep)
            new_kwargs = substitute(dict(kwargs), "kwargs", reference.inputs, keep_dtype=keep)
            replaced = (tuple(new_args), new_kwargs)
            self.forced.add(id(record))
            args, kwargs = replaced
        if self.inputs or record.start == 0:
            copies = {p: self._copy(name, p, t) for p, t in call_inputs(args, kwargs)}
            if self.inputs:
                record.inputs.update(copies)
            if record.start == 0:
                self._root_inputs = copies
        return replaced

    def _post(self, raw: str, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        name = self._names.get(raw, raw)
        record = self._open[name].pop()
        for path, tensor in flatten(output):
            record.outputs[path] = self._copy_output(name, path, tensor)
            if self._grad_hooks is not None and tensor.requires_grad:
                reg = self._grad_hooks.registration((raw,), module, self._post)
                self._grad_hooks.add(reg, tensor, self._grad_saver(record, path))
        self.calls.append(record)

    def _trace_pre(
        self, raw: str, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        tensors = _clones(call_inputs(args, kwargs)) if self.inputs else []
        self._events.append((raw, type(module).__name__, True, tensors))

    def _trace_post(self, raw: str, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        self._events.append((raw, "", False, _clones(flatten(output))))

    def finish(self, root_inputs: Iterator[tuple[str, torch.Tensor]]) -> None:
        """``traced=True``: turn the run's events into calls (CPU copies, ``max_bytes`` counted).

        Args:
            root_inputs: ``(path, tensor)`` of the model's own inputs (`call_inputs`).
        """
        self._root_inputs = {p: self._copy("", p, t) for p, t in root_inputs}
        events, self._events = self._events, []
        for raw, type_name, is_pre, tensors in events:
            name = self._names.get(raw, raw)
            if is_pre:
                call = self._counts.get(name, 0)
                self._counts[name] = call + 1
                record = CallRecord(name, call, self._starts, type_name)
                self._starts += 1
                self._open.setdefault(name, []).append(record)
                record.inputs.update({p: self._copy(name, p, t) for p, t in tensors})
                continue
            record = self._open[name].pop()
            for path, tensor in tensors:
                record.outputs[path] = self._copy_output(name, path, tensor)
            self.calls.append(record)

    def _grad_saver(self, record: CallRecord, path: str) -> Callable[[torch.Tensor], None]:
        def save(grad: torch.Tensor) -> None:
            record.grads[path] = self._copy(record.name, f"grad/{path}", grad)

        return save

    def _copy_output(self, name: str, path: str, tensor: torch.Tensor) -> torch.Tensor:
        # A container usually returns its last child's output tensor itself
        # (GPT2Model -> ln_f, the LM's logits -> lm_head): copy it once. The
        # weak reference and version counter make sure it is the same,
        # unchanged tensor, not a new one at a recycled id.
        seen = self._outputs.get(id(tensor))
        if seen is not None and seen[0]() is tensor and seen[1] == tensor._version:
            return seen[2]
        copy = self._copy(name, path, tensor)
        self._outputs[id(tensor)] = (weakref.ref(tensor), tensor._version, copy)
        return copy

    def _copy(self, name: str, path: str, tensor: torch.Tensor) -> torch.Tensor:
        size = tensor.numel() * tensor.element_size()
        if self.max_bytes is not None and self.nbytes + size > self.max_bytes:
            raise CaptureOverflowError(
                f"recording {name or '(root)'}:{path or 'output'} (shape {tuple(tensor.shape)}, "
                f"{tensor.dtype}, {size:,} bytes) would exceed max_bytes={self.max_bytes:,} "
                f"({self.nbytes:,} already recorded); select fewer modules, use smaller "
                "inputs or raise max_bytes"
            )
        self.nbytes += size
        return tensor.detach().to("cpu", copy=True)


def _clones(tensors: Iterator[tuple[str, torch.Tensor]]) -> list[tuple[str, torch.Tensor]]:
    """Detached clones, taken inside a traced hook: later in-place ops in the graph do not reach them."""
    return [(path, tensor.detach().clone()) for path, tensor in tensors]


def _device_of(model: nn.Module) -> str:
    param = next(model.parameters(), None)
    return str(param.device) if param is not None else "cpu"
