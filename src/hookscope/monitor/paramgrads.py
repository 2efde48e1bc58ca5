"""Parameter gradients reduced once the backward has finished, not one hook at a time.

The Monitor's post-accumulate-grad hook on each parameter used to reduce
the gradient right there. Each such call lands between the backward's own
kernels, whose data has pushed the hook's code and objects out of the
caches: on a compiled SmallCNN step ~10-18 µs a hook for ~4 µs of work
(benchmarks/README.md, "Monitor on a compiled model"). So the hook only
notes the gradient (tensor object and version) and queues one autograd
completion callback per backward, which reduces every noted gradient in
one loop, in the order the hooks ran.

That reads the same values only if nothing changes the gradient between
its hook and the end of the backward. `ParamGrads.defers` therefore puts
off only plain tensors whose one post-accumulate-grad hook is the
Monitor's, outside torch.distributed (DDP's reducer writes all-reduced
gradients back before the backward ends; ``grads="local"`` reports each
rank's own) and never for FSDP1's views of a flat gradient. Anything else
(another hook on the parameter, e.g. an optimizer step in the backward) is
reduced at once, as before. Should a gradient still differ at the end
(replaced or changed in place by something else), the callback reads it
as it is then.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from hookscope import dist

#: A gradient put off: (parameter name, parameter, its ``.grad`` then, that tensor's version).
Pending = tuple[str, torch.Tensor, torch.Tensor, int]


class ParamGrads:
    """Which parameter gradients wait for the end of the backward, and the callback that reads them.

    Args:
        flush: reduces `pending` (`hookscope.monitor.collector.Collector.flush_param_grads`).
    """

    def __init__(self, flush: Callable[[], None]) -> None:
        self.flush = flush
        #: False: every gradient is reduced in its hook (benchmarks compare).
        self.enabled = True
        self.pending: list[Pending] = []
        #: The graph task whose end a callback was queued for, and whether it may defer.
        self._task = -2
        self._may_defer = False

    def defers(self, param: torch.Tensor, grad: torch.Tensor) -> bool:
        """Whether ``param``'s gradient can wait for the end of the running backward.

        Queues the completion callback the first time in each backward.
        """
        if not self.enabled or type(grad) is not torch.Tensor:
            return False
        if type(param) is not torch.nn.Parameter:
            return False
        hooks = param._post_accumulate_grad_hooks
        if hooks is None or len(hooks) != 1:
            return False
        task = int(torch._C._current_graph_task_id())
        if task != self._task:
            if task == -1:
                return False
            self._task = task
            self._may_defer = not dist.initialized()
            if self._may_defer:
                torch.autograd.Variable._execution_engine.queue_callback(self._finished)
        return self._may_defer

    def _finished(self) -> None:
        self._task = -2
        self.flush()
