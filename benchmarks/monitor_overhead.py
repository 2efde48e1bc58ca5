"""Monitor overhead: plain forward vs hookscope.Monitor vs a naive ``.item()`` hook.

ResNet-50-shaped CNN (``hookscope.zoo.resnet50_like``), batch 8, or with
``--model gpt2`` a GPT-2 built from a ``transformers`` config (6 layers, 768
wide, no LM head, no weights downloaded), batch 4 x 128 tokens (``--model
gpt2-narrow``: 64 wide, 1 x 8 tokens, so small that the kernel reads next to
nothing and the us/call column is the Python cost of the hook path); CPU fp32,
every leaf module, inference forward (``torch.no_grad``). ``--busy N``
starts N processes that burn a CPU each for the whole run (what DataLoader
workers or a second job do to a training machine); the load average is
printed before and after. Each monitored
forward is followed by ``mon.step()`` (the one host transfer), which is
included. Every forward of a variant alternates with a forward of an
identical copy of the model that carries no hooks (in A B, B A order), so
both see the same machine; a repetition (4 monitored steps, or 10 for
``every=10``) gives the ratio of the summed times, and the median over
repetitions is reported. Wall time and process CPU time
are both reported.

Variants:

* plain again: the hooked model with no hooks, the noise floor of the ratios;
* hookscope defaults (on CPU, the one-pass native kernel);
* the same with eager PyTorch reductions (``native.set_enabled(False)``,
  what a machine without a C compiler gets);
* ``every=10``: 10 steps, one recorded;
* ``fused=True`` (``torch.compile``; with ``--device cuda`` only);
* the naive hook.

Besides the ratios, the extra time per monitored module call is printed
(median monitored minus plain forward, over the module calls of a forward).

    .venv/bin/python benchmarks/monitor_overhead.py [--model resnet50|gpt2] [--busy N]
        [--reps 7] [--batch 8] [--threads N] [--train] [--device cuda] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

import hookscope
from hookscope.stats import native
from hookscope.zoo import resnet50_like


def naive_hooks(model: nn.Module) -> list[Any]:
    """What many tutorials do: six ``.item()`` calls per layer and forward."""
    stats: list[tuple[float, ...]] = []

    def hook(_module: nn.Module, _args: Any, out: Any) -> None:
        if isinstance(out, torch.Tensor) and out.is_floating_point():
            stats.append(
                (
                    out.mean().item(),
                    out.std().item(),
                    out.min().item(),
                    out.max().item(),
                    torch.isnan(out).sum().item(),
                    torch.isinf(out).sum().item(),
                )
            )

    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    return [m.register_forward_hook(hook) for m in leaves]


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def build(name: str, batch: int | None, device: torch.device) -> tuple[nn.Module, Any]:
    """The model and its input: ResNet-50-shaped images, or GPT-2 token ids."""
    torch.manual_seed(0)
    if name in ("gpt2", "gpt2-narrow"):
        from transformers import GPT2Config, GPT2Model

        narrow = name == "gpt2-narrow"
        width, heads, tokens = (64, 4, 8) if narrow else (768, 12, 128)
        config = GPT2Config(n_layer=6, n_embd=width, n_head=heads, n_positions=1024)
        model: nn.Module = GPT2Model(config)
        ids = torch.randint(
            0, config.vocab_size, (batch or (1 if narrow else 4), tokens), device=device
        )
        return model.eval().to(device), ids
    x = torch.randn(batch or 8, 3, 224, 224, device=device)
    return resnet50_like().eval().to(device), x


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    """``count`` processes that each burn one CPU until the block ends."""
    burn = "while True:\n    pass"
    procs = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def module_calls(model: nn.Module, forward: Callable[[], None]) -> int:
    """How many leaf-module calls one forward makes (the Monitor hooks each)."""
    calls = [0]

    def count(*_: Any) -> None:
        calls[0] += 1

    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    handles = [m.register_forward_hook(count) for m in leaves]
    try:
        forward()
    finally:
        for handle in handles:
            handle.remove()
    return calls[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet50", "gpt2", "gpt2-narrow"], default="resnet50")
    parser.add_argument("--busy", type=int, default=0, help="CPU-burning processes to start")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--batch", type=int, default=None, help="default 8 (resnet50), 4 (gpt2)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (0: default)")
    parser.add_argument(
        "--train", action="store_true", help="forward + backward (gradient statistics too)"
    )
    parser.add_argument("--quick", action="store_true", help="only plain again and defaults")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    model, x = build(args.model, args.batch, device)
    twin = copy.deepcopy(model)  # never hooked: the plain side of every pair

    def forward_of(net: nn.Module) -> Callable[[], None]:
        def forward() -> None:
            if args.train:
                net.zero_grad(set_to_none=True)
                out = net(x)
                (
                    out if isinstance(out, torch.Tensor) else out.last_hidden_state
                ).float().mean().backward()
            else:
                with torch.no_grad():
                    net(x)
            if device.type == "cuda":
                torch.cuda.synchronize()

        return forward

    pair = Pair(forward_of(twin), forward_of(model))
    calls = module_calls(model, pair.hooked)
    variants: dict[str, Callable[[], tuple[float, float]]] = {
        FLOOR: lambda: pair.run(4),
        "hookscope defaults": lambda: pair.monitored(model, {}, 4),
    }
    if not args.quick:
        variants["hookscope eager reductions"] = lambda: pair.monitored(
            model, {}, 4, native_on=False
        )
        variants["hookscope every=10"] = lambda: pair.monitored(model, {"every": 10}, 10)
    if device.type != "cpu":
        variants["hookscope fused=True"] = lambda: pair.monitored(model, {"fused": True}, 4)
        start = time.perf_counter()
        with hookscope.Monitor(model, keep=False, fused=True) as mon:
            pair.hooked()
            mon.step()
        print(f"fused=True one-time compile and first step: {time.perf_counter() - start:.1f} s")
    if not args.quick:
        variants["naive .item()"] = lambda: pair.naive(model)
    print(f"native kernel: {native.why_unavailable() or 'in use'}")
    print(f"load average before: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    with busy(args.busy):
        for run in variants.values():
            run()  # warm-up: the kernel is built and loaded on first use
        pair.plain_times.clear()
        ratios: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
        for _rep in range(args.reps):
            for label, run in variants.items():
                ratios[label].append(run())
    print(f"load average after: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    mode = "forward + backward" if args.train else "inference forward"
    shape = {"gpt2": "GPT-2 6L 768", "gpt2-narrow": "GPT-2 6L 64"}.get(
        args.model, "ResNet-50-shaped"
    )
    print(
        f"{shape}, batch {tuple(x.shape)}, {device} fp32, {torch.get_num_threads()} threads,"
        f" {args.busy} busy processes, {calls} monitored module calls a forward,"
    )
    print(f"{mode}; {args.reps} repetitions, medians (min-max) of the per-repetition ratios")
    plain_wall = statistics.median(w for w, _ in pair.plain_times)
    plain_cpu = statistics.median(c for _, c in pair.plain_times)
    print(
        f"{'variant':<28}{'x plain (wall)':>22}{'x plain (cpu)':>15}{'us/call':>9}"
        f"{'x plain again (wall)':>26}"
    )
    print(f"{'plain':<28}{f'1.00 ({plain_wall:.3f} s)':>22}{f'1.00 ({plain_cpu:.3f} s)':>15}")
    floor = ratios[FLOOR]
    for label, values in ratios.items():
        walls = [w for w, _ in values]
        wall = statistics.median(walls)
        cpu = statistics.median(c for _, c in values)
        spread = f"{wall:.3f} ({min(walls):.2f}-{max(walls):.2f})"
        per_call = (wall - 1.0) * plain_wall / calls * 1e6
        # Against the same model without hooks, measured in the same repetition:
        # the two copies' own speed difference (memory placement) cancels.
        same = [w / f for (w, _), (f, _) in zip(values, floor, strict=True)]
        corrected = "" if label == FLOOR else _median_spread(same)
        print(f"{label:<28}{spread:>22}{cpu:>15.3f}{per_call:>9.1f}{corrected:>26}")


def _median_spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.2f}-{max(values):.2f})"


#: The hooked model with no hooks against its twin: the two copies' own difference.
FLOOR = "plain again (noise floor)"


class Pair:
    """Alternates forwards of the unhooked twin (``plain``) and the model under test (``hooked``)."""

    def __init__(self, plain: Callable[[], None], hooked: Callable[[], None]) -> None:
        self.plain, self.hooked = plain, hooked
        self.plain_times: list[tuple[float, float]] = []

    def run(self, steps: int, after: Callable[[], object] = lambda: None) -> tuple[float, float]:
        """(wall, cpu) ratios of ``steps`` hooked forwards (each followed by ``after``) to plain ones."""
        plain, hooked = [0.0, 0.0], [0.0, 0.0]
        for step in range(steps):
            if step % 2:  # alternate the order too: A B, B A, ...
                test = timed(lambda: (self.hooked(), after()))
                base = timed(self.plain)
            else:
                base = timed(self.plain)
                test = timed(lambda: (self.hooked(), after()))
            self.plain_times.append(base)
            for i in (0, 1):
                plain[i] += base[i]
                hooked[i] += test[i]
        return hooked[0] / plain[0], hooked[1] / plain[1]

    def monitored(
        self, model: nn.Module, options: dict[str, Any], steps: int, native_on: bool = True
    ) -> tuple[float, float]:
        native.set_enabled(native_on)
        try:
            with hookscope.Monitor(model, keep=False, **options) as mon:
                return self.run(steps, mon.step)
        finally:
            native.set_enabled(True)

    def naive(self, model: nn.Module) -> tuple[float, float]:
        handles = naive_hooks(model)
        try:
            return self.run(1)
        finally:
            for handle in handles:
                handle.remove()


if __name__ == "__main__":
    main()
