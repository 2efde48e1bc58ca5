"""Where the Monitor's time goes on a GPT-2 forward: its hooks, its kernel, `mon.step()`, the rest.

A GPT-2 from a ``transformers`` config (6 layers, 768 wide, batch 4 x 128
tokens, CPU fp32, inference) and an identical unhooked copy; forwards
alternate A B, B A. Both copies carry the same timing hooks on every leaf
module (the first pre-hook and the last forward hook of each module), so the
time spent inside the Monitor's hooks is measured directly; the kernel calls
are timed by wrapping `hookscope.stats.native`. Minor page faults per forward
(``getrusage``) are printed too: they vary from process to process with the
allocator's state and move the whole-forward ratio by several percent either
way, which a direct measure does not see.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/monitor_split.py [--reps 30] [--threads N]
"""

from __future__ import annotations

import argparse
import copy
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import hookscope
from hookscope.stats import native


class Timers:
    """Time spent inside other hooks of every leaf module, and in the modules' own bodies."""

    def __init__(self) -> None:
        self.hooks = 0.0
        self.bodies = 0.0
        self._mark = 0.0

    def attach(self, model: nn.Module) -> None:
        for module in model.modules():
            if next(module.children(), None) is None:
                module.register_forward_pre_hook(self._enter_hooks, prepend=True)
                module.register_forward_pre_hook(self._enter_body)
                module.register_forward_hook(self._leave_body, prepend=True)
                module.register_forward_hook(self._leave_hooks)

    def reset(self) -> None:
        self.hooks = self.bodies = 0.0

    def _enter_hooks(self, *_: Any) -> None:
        self._mark = time.perf_counter()

    def _enter_body(self, *_: Any) -> None:
        now = time.perf_counter()
        self.hooks += now - self._mark
        self._mark = now

    def _leave_body(self, *_: Any) -> None:
        now = time.perf_counter()
        self.bodies += now - self._mark
        self._mark = now

    def _leave_hooks(self, *_: Any) -> None:
        self.hooks += time.perf_counter() - self._mark


class KernelClock:
    """Wall time and calls of the native kernel (`native.moments` and `moments_relu`)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        for name in ("moments", "moments_relu"):
            setattr(native, name, self._timed(getattr(native, name)))

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        return timed


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=1024)).eval()
    twin = copy.deepcopy(model)
    ids = torch.randint(0, 50257, (4, 128))
    timers, kernel = Timers(), KernelClock()
    timers.attach(twin)
    rows: dict[str, list[float]] = {
        k: [] for k in ("plain", "mon", "hooks", "hooks0", "kernel", "step", "pf", "mf")
    }
    with hookscope.Monitor(model, keep=False) as mon, torch.no_grad():
        timers.attach(model)  # after the Monitor's hooks: around them
        for _ in range(3):
            model(ids)
            mon.step()
            twin(ids)
        for rep in range(args.reps):
            for monitored in (True, False) if rep % 2 == 0 else (False, True):
                timers.reset()
                kernel.seconds, kernel.calls = 0.0, 0
                before = faults()
                start = time.perf_counter()
                if monitored:
                    model(ids)
                    forward = time.perf_counter()
                    mon.step()
                    end = time.perf_counter()
                    rows["mon"].append(end - start)
                    rows["step"].append(end - forward)
                    rows["hooks"].append(timers.hooks)
                    rows["kernel"].append(kernel.seconds)
                    rows["mf"].append(faults() - before)
                else:
                    twin(ids)
                    rows["plain"].append(time.perf_counter() - start)
                    rows["hooks0"].append(timers.hooks)
                    rows["pf"].append(faults() - before)
    ms = {k: statistics.median(v) * 1e3 for k, v in rows.items()}
    own = ms["hooks"] - ms["hooks0"] + ms["step"]
    print(f"GPT-2 6L 768, batch 4 x 128, cpu fp32, {torch.get_num_threads()} threads,")
    print(f"{args.reps} alternating pairs, medians; {kernel.calls} kernel calls a forward")
    print(f"plain forward            {ms['plain']:8.2f} ms")
    print(f"monitored forward + step {ms['mon']:8.2f} ms  ({ms['mon'] / ms['plain']:.3f}x)")
    print(f"  inside the Monitor's hooks {ms['hooks'] - ms['hooks0']:6.2f} ms"
          f"  (of which the kernel {ms['kernel']:.2f} ms)")  # fmt: skip
    print(f"  mon.step()                 {ms['step']:6.2f} ms")
    print(f"  the Monitor's own time     {own:6.2f} ms  ({1 + own / ms['plain']:.3f}x)")
    print(f"  the rest                   {ms['mon'] - ms['plain'] - own:6.2f} ms")
    print(
        f"minor page faults a forward: monitored {ms['mf'] / 1e3:.0f}, plain {ms['pf'] / 1e3:.0f}"
    )


if __name__ == "__main__":
    main()
