"""The hot path: hook callbacks that launch reductions and queue them for `Monitor.step`.

Nothing here reads a device value back (see `hookscope.stats.reduce` for the
one host-only exception). Each callback appends an `Entry` — which tensor, and
its pending `Reduction` — to a list in execution order; `Monitor.step` fetches
them all at once.

Hooks used (all through a `HookSession`):

* forward pre-hook ``(name, module, args)``: statistics of inputs
  (``inputs=True``); otherwise a finiteness check of each input that no
  monitored module produced earlier in the step (the model input, results of
  functional ops), so the first NaN can be told apart from one that came in;
  gradient hooks on inputs that require grad (the module's input gradient,
  used to attribute the first non-finite gradient). On CPU, where the
  outputs' reductions are known in the hook, the check waits for the forward
  hook and runs only if an output is not finite, saving a read of those
  inputs in every normal step; except for modules that overwrite their input
  (``inplace=True``) and could turn a finite input into a NaN, which are
  checked first (see `KEEPS_NONFINITE`).
* forward hook ``(name, module, args, output)``: output statistics, and
  gradient hooks on outputs (the module's output gradient). Tensor hooks are
  used instead of full backward hooks because they survive in-place ops on the
  output (see `hookscope.hooks.globals`).
* post-accumulate-grad hook ``(name, param)``: parameter gradient norm.

An ``nn.ReLU``'s output statistics come from the kernel pass over its input
when the module that made that input was seen feeding this ReLU in an
earlier step (see `Collector._output_reduction`).

Forwards that run inside a backward (activation checkpointing recomputes
them) get gradient hooks only: their statistics were taken the first time.

Steps a Monitor does not record (``every``) are *checked*: with
``checking`` set, the same hooks see the same tensors (outputs, inputs that
no monitored module made, output and parameter gradients) but take only
`hookscope.stats.check_tensor`'s exact NaN/Inf counts, so the first
non-finite tensor is found at any cadence (see `hookscope.monitor.sentinel`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch import nn

from hookscope.hooks.compiled import tracing
from hookscope.hooks.globals import TensorGradHooks
from hookscope.hooks.handles import Registration
from hookscope.monitor.entries import Entry, Role
from hookscope.monitor.records import Phase
from hookscope.monitor.traced import TracedCollector
from hookscope.shards import local_tensor
from hookscope.stats import (
    Plan,
    Reduction,
    accuracy,
    check_tensor,
    reduce_tensor,
    reduce_with_relu,
    tensors_in,
)

#: Reductions for gradients (norm, RMS) and for "did a NaN come in?" checks.
GRAD_PLAN = Plan(sum=False, squares=True, extrema=False)
CHECK_PLAN = Plan(sum=True, squares=False, extrema=False)

#: In-place modules whose output is NaN exactly where the input was and that
#: never make a NaN/Inf from finite values: checking their (overwritten)
#: input after the fact still tells whether a NaN came in. An Inf they clamp
#: (ReLU of -inf) goes unreported.
KEEPS_NONFINITE: tuple[type[nn.Module], ...] = (
    nn.ReLU, nn.Hardtanh, nn.LeakyReLU, nn.RReLU, nn.Threshold,
    nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d,
)  # fmt: skip

#: A module output seen this step: (tensor, version, module name, plan, reduction or None).
Produced = tuple["weakref.ref[torch.Tensor]", int, str, Plan, Reduction | None]


@dataclass
class CollectOptions:
    """What the collector records (validated by `Monitor`)."""

    inputs: bool
    outputs: bool
    grads: bool
    plans: dict[str, Plan]


class Collector:
    """Hook callbacks of one monitor; ``entries`` fills in execution order."""

    def __init__(self, options: CollectOptions, grad_hooks: TensorGradHooks | None) -> None:
        self.options = options
        self.grad_hooks = grad_hooks
        self.grad_regs: dict[str, Registration] = {}
        self.entries: list[Entry] = []
        #: The hooks work this step (False: `Monitor.pause`).
        self.recording = True
        #: This step is checked only: NaN/Inf counts instead of statistics (``every``).
        self.checking = False
        #: Tensors monitored modules output this step: (tensor, version, module
        #: name, the plan and reduction of its statistics if they were taken).
        self._produced: dict[int, Produced] = {}
        #: Module name -> the name of the ``nn.ReLU`` its output went to (learned
        #: in a step, used in the next: see `_output_reduction`).
        self._feeds_relu: dict[str, str] = {}
        #: Outputs whose moments were last taken around 0.0 (their mean cancelled:
        #: layer norms, batch norms); taking them so again saves a second pass.
        self._mean_free: set[str] = set()
        #: Reductions of ``relu(t)`` taken with ``t``'s, for that ReLU's output.
        self._relu_ready: dict[int, tuple[weakref.ref[torch.Tensor], int, Reduction]] = {}
        self._grad_roles: dict[int, tuple[weakref.ref[torch.Tensor], int, list[Role]]] = {}
        #: Per module name, a stack (one per call in progress) of input checks
        #: put off to the forward hook, with the entry index they belong at.
        self._deferred: dict[str, list[tuple[int, list[tuple[str, torch.Tensor]]]]] = {}
        self._can_defer: dict[str, bool] = {}
        #: Takes over the forward hook inside compiled graphs (`hookscope.monitor.traced`).
        self.traced: TracedCollector | None = None
        #: ``grads="reduced"``: called from gradient hooks instead of reducing
        #: parameter gradients there (`hookscope.monitor.ranks.GradReader.schedule`).
        self.after_backward: Callable[[], None] | None = None

    def take(self) -> list[Entry]:
        """Hand over this step's entries (compiled graphs' too) and start a new step."""
        entries, self.entries = self.entries, []
        if self.traced is not None:
            forward, backward = self.traced.take()
            entries = forward + entries + backward
        self._produced = {}
        self._relu_ready = {}
        self._grad_roles = {}
        self._deferred = {}
        return entries

    # -- hooks ---------------------------------------------------------------------

    def on_forward_pre(self, name: str, module: nn.Module, args: tuple[Any, ...]) -> None:
        """Forward pre-hook: ``(name, module, args) -> None``."""
        if not self.recording or tracing():
            return
        if _in_backward():
            self._recomputed(name, args, "input", self.options.inputs)
            return
        grads = self.grad_hooks is not None and torch.is_grad_enabled()
        deferred: list[tuple[str, torch.Tensor]] = []
        defer = self._can_defer.get(name)
        if defer is None:  # once per module: a missing attribute costs an exception
            defer = self._can_defer[name] = self.options.outputs and (
                not getattr(module, "inplace", False) or isinstance(module, KEEPS_NONFINITE)
            )
        if type(module) is nn.ReLU and args:
            self._learn_relu(name, args[0])
        stats = self.options.inputs and not self.checking
        for path, t in tensors_in(args, "input"):
            if stats:
                self._reduce("forward", name, path, t, self.options.plans[name], True)
            elif t.is_floating_point() and not self._was_produced(t):
                if defer and t.is_cpu:
                    deferred.append((path, t))
                else:
                    self._check("forward", name, path, t, False)
            if grads and t.requires_grad:
                self._grad_role(name, path, t, self.options.inputs)
        self._deferred.setdefault(name, []).append((len(self.entries), deferred))

    def on_forward(self, name: str, module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        """Forward hook: ``(name, module, args, output) -> None`` (in compiled graphs: the output).

        Inside a compiled graph the output may come back wrapped for gradient
        statistics (see `hookscope.monitor.traced`).
        """
        if tracing():  # first, so that no graph guards on `recording` or `checking`
            if self.traced is None:
                return None
            return self.traced.on_forward(name, output, module, args)
        if not self.recording:
            return None
        if _in_backward():
            self._recomputed(name, output, "output", True)
            return None
        grads = self.grad_hooks is not None and torch.is_grad_enabled()
        checking = self.checking
        plan = CHECK_PLAN if checking else self.options.plans[name]
        start = len(self.entries)
        for path, t in tensors_in(output, "output"):
            red = None
            if self.options.outputs:
                red = self._reused(t, plan)
                if red is None:
                    red = (
                        _check_local(t)
                        if checking
                        else self._output_reduction(name, path, module, args, t, plan)
                    )
                self.entries.append(
                    Entry("forward", [(name, path, True)], red, tuple(t.shape), t.dtype)
                )
            self._produced[id(t)] = (weakref.ref(t), t._version, name, plan, red)
            if grads and t.requires_grad:
                self._grad_role(name, path, t, True)
        stack = self._deferred.get(name)
        if stack:
            index, deferred = stack.pop()
            if deferred and not all(e.red.known_finite() for e in self.entries[start:]):
                self.entries[index:index] = [
                    Entry("forward", [(name, path, False)], _check_local(t),
                          tuple(t.shape), t.dtype)
                    for path, t in deferred
                ]  # fmt: skip
        return None

    def on_param_grad(self, name: str, param: torch.Tensor) -> None:
        """Post-accumulate-grad hook: ``(name, param) -> None``."""
        if not self.recording or param.grad is None:
            return
        if self.after_backward is not None:
            self.after_backward()
            return
        grad = param.grad
        red = _check_local(grad) if self.checking else _reduce_local(grad, GRAD_PLAN)
        self.entries.append(
            Entry("param", [(name, "grad", True)], red, tuple(grad.shape), grad.dtype)
        )

    # -- internals -----------------------------------------------------------------

    def _reduce(
        self, phase: Phase, name: str, path: str, t: torch.Tensor, plan: Plan, shown: bool
    ) -> None:
        red = _reduce_local(t, plan)
        self.entries.append(Entry(phase, [(name, path, shown)], red, tuple(t.shape), t.dtype))

    def _check(self, phase: Phase, name: str, path: str, t: torch.Tensor, shown: bool) -> None:
        red = _check_local(t)
        self.entries.append(Entry(phase, [(name, path, shown)], red, tuple(t.shape), t.dtype))

    def _recomputed(self, name: str, value: Any, prefix: str, shown: bool) -> None:
        """A forward re-run inside a backward (activation checkpointing).

        Its statistics were taken in the first run; only gradient hooks are
        added, since reentrant checkpointing backpropagates through these tensors.
        """
        if self.grad_hooks is None or not torch.is_grad_enabled():
            return
        for path, t in tensors_in(value, prefix):
            if t.requires_grad:
                self._grad_role(name, path, t, shown)

    def _output_reduction(
        self,
        name: str,
        path: str,
        module: nn.Module,
        args: tuple[Any, ...],
        t: torch.Tensor,
        plan: Plan,
    ) -> Reduction:
        """Reductions of output ``t``: one kernel pass, or none for a ReLU's output.

        A module whose output went to an ``nn.ReLU`` last step gets the ReLU
        output's reductions from the same pass over its own output (float32
        CPU, finite values); the ReLU then reads nothing. In a CNN every
        conv-norm-ReLU saves one read of a full activation.
        """
        if type(module) is nn.ReLU and args and isinstance(args[0], torch.Tensor):
            x = args[0]
            ready = self._relu_ready.pop(id(x), None)
            # relu_ bumps the input's version once; the out-of-place ReLU leaves it
            if ready is not None and ready[0]() is x and x._version == ready[1] + (t is x):
                accuracy.repair(t, ready[2])  # reads t only if the sums cancelled
                return ready[2]
        relu = self._feeds_relu.get(name)
        key = name if path == "output" else f"{name} {path}"
        shift = 0.0 if key in self._mean_free else None
        if relu is None or type(t) is not torch.Tensor:
            red = _reduce_local(t, plan, shift)
        else:
            red, after = reduce_with_relu(t, plan, self.options.plans[relu], shift)
            if after is not None:
                self._relu_ready[id(t)] = (weakref.ref(t), t._version, after)
        if type(red.shift) is float and red.shift == 0.0:
            self._mean_free.add(key)
        else:
            self._mean_free.discard(key)
        return red

    def _reused(self, t: torch.Tensor, plan: Plan) -> Reduction | None:
        """The reduction already taken of ``t`` if an earlier module output it unchanged.

        Modules that return their input as it is (eval-mode ``Dropout``,
        ``Identity``) then cost no second read of the tensor.
        """
        seen = self._produced.get(id(t))
        if seen is None or seen[4] is None or seen[3] != plan or seen[0]() is not t:
            return None
        return seen[4] if seen[1] == t._version else None

    def _learn_relu(self, relu: str, x: Any) -> None:
        """ReLU pre-hook part: note which monitored module made the ReLU's input."""
        if isinstance(x, torch.Tensor) and self._was_produced(x):
            self._feeds_relu.setdefault(self._produced[id(x)][2], relu)

    def _was_produced(self, t: torch.Tensor) -> bool:
        seen = self._produced.get(id(t))
        return seen is not None and seen[0]() is t and seen[1] == t._version

    def _grad_role(self, name: str, path: str, t: torch.Tensor, shown: bool) -> None:
        if not t.is_floating_point() and not t.is_complex():
            return
        role: Role = (name, path, shown)
        seen = self._grad_roles.get(id(t))
        if seen is not None and seen[0]() is t and seen[1] == t._version:
            # Same tensor, same version: one hook serves every role. A module
            # that returns its input unchanged (Identity, eval Dropout) did not
            # make that tensor's gradient: drop its input role.
            roles = seen[2]
            if not path.startswith("input"):
                roles[:] = [r for r in roles if not (r[0] == name and r[1].startswith("input"))]
            roles.append(role)
            return
        roles = [role]
        self._grad_roles[id(t)] = (weakref.ref(t), t._version, roles)
        assert self.grad_hooks is not None
        self.grad_hooks.add(self.grad_regs[name], t, partial(self.on_grad, roles))

    def on_grad(self, roles: list[Role], grad: torch.Tensor) -> None:
        """Tensor gradient hook (bound to ``roles``): ``(grad) -> None``."""
        if self.after_backward is not None:
            self.after_backward()
        red = _check_local(grad) if self.checking else _reduce_local(grad, GRAD_PLAN)
        self.entries.append(Entry("backward", roles, red, tuple(grad.shape), grad.dtype))


def _reduce_local(t: torch.Tensor, plan: Plan, shift: float | None = None) -> Reduction:
    """`reduce_tensor` on the part of ``t`` this process holds (a ``DTensor``'s shard).

    Tensor subclasses never reach the kernels as they are: a ``DTensor``
    holds no readable pointer and reports its global size.
    """
    if type(t) is not torch.Tensor:
        local = local_tensor(t)
        if local is None:
            return Reduction("skip", 0)
        t = local
    return reduce_tensor(t, plan, shift)


def _check_local(t: torch.Tensor) -> Reduction:
    """`check_tensor` (exact NaN/Inf counts only) of the part of ``t`` this process holds."""
    if type(t) is not torch.Tensor:
        local = local_tensor(t)
        if local is None:
            return Reduction("skip", 0)
        t = local
    return check_tensor(t)


def _in_backward() -> bool:
    """True while autograd runs a backward: a forward now is activation-checkpoint recompute."""
    return bool(torch._C._current_graph_task_id() != -1)
