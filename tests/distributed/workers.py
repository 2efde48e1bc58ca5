"""Code that runs inside the spawned ranks of the distributed tests."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as tdist
from torch import nn

import hookscope
from hookscope.errors import DistributedError
from hookscope.integrations.training import TrainingMonitor, total_grad_norm
from hookscope.sinks import JsonlSink
from hookscope.summary.params import model_totals
from tests.distributed.harness import init

VARIANTS = ("ddp", "fsdp1", "fsdp1_orig", "fsdp2")
STEPS = 5


class Tiny(nn.Module):
    """A one-layer transformer language model."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 32)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(self.layer(self.embed(ids)))
        return out


def batch(step: int, rank: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randint(0, 32, (4, 6), generator=generator)


def wrap(model: nn.Module, variant: str) -> nn.Module:
    if variant == "ddp":
        return nn.parallel.DistributedDataParallel(model)
    if variant.startswith("fsdp1"):
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        return FullyShardedDataParallel(
            model,
            auto_wrap_policy=ModuleWrapPolicy({nn.TransformerEncoderLayer}),
            use_orig_params=variant == "fsdp1_orig",
            device_id=torch.device("cpu"),
        )
    from torch.distributed.fsdp import fully_shard

    fully_shard(model.layer)
    fully_shard(model)
    return model


def reference(model: nn.Module, rank: int) -> dict[str, Any]:
    """Step 0 on an unwrapped copy: each leaf's output and each parameter's local gradient."""
    outputs: dict[str, torch.Tensor] = {}
    handles = [
        module.register_forward_hook(
            lambda _m, _a, out, name=name: outputs.__setitem__(name, out.detach().clone())
        )
        for name, module in model.named_modules()
        if not list(module.children())
    ]
    model(batch(0, rank)).square().mean().backward()
    for handle in handles:
        handle.remove()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    return {"outputs": outputs, "grads": grads}


def models(rank: int) -> Iterator[tuple[str, dict[str, Any], nn.Module]]:
    """Each variant's wrapped `Tiny` (seed 0), with step 0 on an unwrapped copy (`reference`)."""
    for variant in VARIANTS:
        torch.manual_seed(0)
        model = Tiny()
        ref = reference(copy.deepcopy(model), rank)
        yield variant, ref, wrap(model, variant)


def train(rank: int, port: int, out: str) -> None:
    """Every variant trains 5 steps under Monitor(ranks="reduce", grads="reduced")."""
    init(rank, port)
    saved: dict[str, Any] = {}
    for variant, ref, wrapped in models(rank):
        opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
        sink = JsonlSink(Path(out) / variant / "monitor.jsonl")
        with hookscope.Monitor(wrapped, ranks="reduce", grads="reduced", sinks=[sink]) as mon:
            for step in range(STEPS):
                opt.zero_grad()
                wrapped(batch(step, rank)).square().mean().backward()
                opt.step()
                mon.step()
        records = [(r.phase, r.module, r.tensor, r.stat, r.value) for r in mon.results[0].records]
        saved[variant] = {
            "ref": ref,
            "records": records,
            "errors": len(mon.errors),
            "params": model_totals(wrapped).params,
            "frame_ranks": sorted(set(mon.to_pandas()["rank"])),
        }
    torch.save(saved, Path(out) / f"rank{rank}.pt")
    nonfinite(rank, out)
    callbacks(rank, out)
    tdist.destroy_process_group()


def callbacks(rank: int, out: str) -> None:
    """What the trainer callbacks share, under ranks="reduce": each step's scalars a step late."""
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tiny())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    run = TrainingMonitor(
        doctor=False, log_stats=(), monitor_kwargs={"ranks": "reduce", "grads": "reduced"}
    )
    run.start(model, Path(out) / f"callbacks{rank}")
    logged = []
    for step in range(3):
        opt.zero_grad()
        model(batch(step, rank)).square().mean().backward()
        opt.step()
        logged.append(run.step(step).get("hookscope/grad_norm"))
    logged.append(run.flush().get("hookscope/grad_norm"))  # the last step, as at train end
    assert run.monitor is not None
    norms = [total_grad_norm(result.records) for result in run.monitor.results]
    run.close()
    Path(out, f"callbacks{rank}.json").write_text(json.dumps([logged, norms]))


def nonfinite(rank: int, out: str) -> None:
    """DDP; rank 1 alone gets a NaN weight in ``head`` before step 2."""
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tiny())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    firsts = {}
    for ranks in ("reduce", "local"):
        with hookscope.Monitor(model, ranks=ranks, grads="reduced") as mon:
            for step in range(4):
                if step == 2 and rank == 1:
                    with torch.no_grad():
                        model.module.head.weight[0, 0] = float("nan")
                opt.zero_grad()
                model(batch(step, rank)).square().mean().backward()
                mon.step()
        first = mon.first_nonfinite
        firsts[ranks] = None if first is None else [first.step, first.phase, first.module,
                                                    first.tensor, first.rank]  # fmt: skip
    Path(out, f"rank{rank}.json").write_text(json.dumps(firsts))


def skipped_step(rank: int, port: int, out: str) -> None:
    """Ranks at different step numbers fail on both; a step only rank 0 takes fails, not hangs."""
    os.environ["HOOKSCOPE_COLLECTIVE_TIMEOUT"] = "3"
    init(rank, port)
    model = Tiny()
    with hookscope.Monitor(model, ranks="reduce") as mon:
        model(batch(0, rank)).sum().backward()
        result = mon.step(step=5 + rank)  # returns at once: the all-reduces are in flight
        try:
            print(result.records)  # completing it waits for them and checks the header
        except DistributedError as exc:
            Path(out, f"numbers{rank}.txt").write_text(str(exc))
    mon = hookscope.Monitor(model, ranks="reduce").open()
    model(batch(0, rank)).sum().backward()
    mon.step()
    if rank == 1:
        time.sleep(8)  # alive, but not in the collective
        Path(out, "rank1.txt").write_text("done")
        os._exit(0)
    model(batch(1, rank)).sum().backward()
    result = mon.step()
    try:
        print(result.alerts)
    except DistributedError as exc:
        Path(out, "rank0.txt").write_text(str(exc))
    os._exit(0)  # the group is unusable after a timed-out collective


def hooks(rank: int, port: int, out: str) -> None:
    """Sessions, doctor and capture on every wrapper: what each hook sees, what the doctor says."""
    init(rank, port)
    saved: dict[str, Any] = {}
    for variant, ref, wrapped in models(rank):
        seen: dict[str, Any] = {"grad": [], "forward": 0, "backward": 0, "names": []}

        def on_grad(name: str, param: torch.Tensor, seen: dict[str, Any] = seen) -> None:
            grad = param.grad
            assert grad is not None
            local = grad.to_local() if hasattr(grad, "to_local") else grad  # FSDP2: a DTensor
            seen["grad"].append((name, tuple(param.shape), local.detach().clone()))

        def count(kind: str, seen: dict[str, Any] = seen) -> Any:
            return lambda *_args: seen.__setitem__(kind, seen[kind] + 1)

        def named(name: str, *_args: Any, seen: dict[str, Any] = seen) -> None:
            seen["names"].append(name)

        with hookscope.session(wrapped) as session:
            session.add_grad_hook(on_grad, "layer.linear1.weight")
            session.add_forward_hook(count("forward"), "*linear1")
            session.add_backward_hook(count("backward"), "*linear1")
            session.add_forward_pre_hook(named, "*linear1")
            wrapped(batch(0, rank)).square().mean().backward()
            report = hookscope.doctor(wrapped, batch(0, rank), backward=True)
        with hookscope.session(wrapped, keep_wrappers=True) as session:
            (kept,) = session.add_forward_hook(count("forward"), "*linear1").registrations
        with hookscope.capture(wrapped, "*head", keep=True) as cache:
            logits = wrapped(batch(0, rank))
        silent = [(h.module, h.kind, h.fired, str(h.reason)) for h in report.hooks if not h.fired]
        rows = [row.name for row in hookscope.summary(wrapped, batch(0, rank)).rows]
        saved[variant] = {
            "doctor": sorted({(h.module, h.kind, h.fired) for h in report.hooks if h.by_hookscope}),
            "names": seen.pop("names"),
            "kept": kept.shown,
            "rows": rows,
            "ref": ref["grads"]["layer.linear1.weight"],
            "seen": seen,
            "silent": silent,
            "bypasses": len(report.bypasses),
            "captured": [(k, torch.equal(v, logits.detach())) for k, v in cache.items()],
        }
    torch.save(saved, Path(out) / f"hooks{rank}.pt")
    tdist.destroy_process_group()


def lonely_doctor(rank: int, port: int, out: str) -> None:
    """Only rank 0 calls doctor(ddp_model, backward=True): it must fail fast, the group survive."""
    os.environ["HOOKSCOPE_COLLECTIVE_TIMEOUT"] = "3"
    init(rank, port)
    model = nn.parallel.DistributedDataParallel(Tiny())
    if rank == 0:
        start = time.monotonic()
        try:
            hookscope.doctor(model, batch(0, rank), backward=True)
        except DistributedError as exc:
            Path(out, "rank0.json").write_text(json.dumps([str(exc), time.monotonic() - start]))
    tdist.barrier()  # no collective was entered: the group still works on both ranks
    report = hookscope.doctor(model, batch(0, rank), backward=True)  # both ranks: runs
    Path(out, f"after{rank}.txt").write_text(str(report.modules_executed))
    sharded = wrap(Tiny(), "fsdp2")  # its forward all-gathers: summary is a collective too
    if rank == 0:
        try:
            hookscope.summary(sharded, batch(0, rank))
        except DistributedError as exc:
            Path(out, "summary0.txt").write_text(str(exc))
    tdist.barrier()
    tdist.destroy_process_group()


class Branchy(nn.Module):
    """Two layers, and a third that runs only when asked (eval-only or rank-dependent code)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.fc2 = nn.Linear(8, 8)
        self.extra = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, extra: bool = False) -> torch.Tensor:
        out: torch.Tensor = self.fc2(self.fc1(x))
        return self.extra(out) if extra else out


#: Every collective of ``torch.distributed`` a process can start.
COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather",
    "gather_object", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list",
)  # fmt: skip


@contextlib.contextmanager
def counting_collectives() -> Iterator[list[str]]:
    """Note the name of every collective started inside the block; each still runs for real.

    Not the PyTorch profiler: under it a gloo rank aborted (SIGABRT) now and then in CI.
    """
    started: list[str] = []
    real = {name: getattr(tdist, name) for name in COLLECTIVES}

    def counted(name: str) -> Any:
        def collective(*args: Any, **kwargs: Any) -> Any:
            started.append(name)
            return real[name](*args, **kwargs)

        return collective

    for name in COLLECTIVES:
        setattr(tdist, name, counted(name))
    try:
        yield started
    finally:
        for name, function in real.items():
            setattr(tdist, name, function)


#: Which ranks run ``Branchy.extra`` at each step of `layouts`.
EXTRA = ((), (), (0, 1), (1,), (), ())


def layouts(rank: int, port: int, out: str) -> None:
    """Monitor(ranks="reduce") while the set of monitored tensors changes; count the collectives."""
    import warnings

    init(rank, port)
    torch.manual_seed(rank)
    model = Branchy()
    maxima, collectives = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hookscope.Monitor(model, ranks="reduce", stats=["max"]) as mon, torch.no_grad():
            for ranks in EXTRA:
                with hookscope.capture(model, keep=True) as cache:
                    model(torch.randn(4, 8), extra=rank in ranks)
                outputs = {name: cache[name].max().item() for name in cache if name}
                with counting_collectives() as started:
                    records = mon.step().records  # reading it waits for the all-reduces
                collectives.append(len(started))
                maxima.append((outputs, {r.module: r.value for r in records}))
    messages = [str(w.message) for w in caught if "hookscope" in str(w.message)]
    Path(out, f"layouts{rank}.json").write_text(json.dumps([maxima, collectives, messages]))
    tdist.destroy_process_group()


def hsdp(rank: int, port: int, out: str) -> None:
    """FSDP2 on a 2-D mesh (replicate 2 x shard 1): each rank holds every shard, alike."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    init(rank, port)
    mesh = init_device_mesh("cpu", (2, 1), mesh_dim_names=("replicate", "shard"))
    torch.manual_seed(0)
    model = Tiny()
    ref = reference(copy.deepcopy(model), rank)
    fully_shard(model.layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    with hookscope.Monitor(model, ranks="reduce", grads="reduced") as mon:
        model(batch(0, rank)).square().mean().backward()
        mon.step()
    norms = {r.module: r.value for r in mon.results[0].records if r.stat == "norm"}
    torch.save({"ref": ref["grads"], "norms": norms}, Path(out, f"hsdp{rank}.pt"))
    tdist.destroy_process_group()


def sentinel(rank: int, port: int, out: str) -> None:
    """DDP, ``every=3``; rank 1 alone gets a NaN weight in ``head`` before unrecorded step 4."""
    init(rank, port)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Tiny())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    found: dict[str, Any] = {}
    for ranks in ("reduce", "local"):
        with torch.no_grad():
            model.module.head.weight[0, 0] = 0.5
        returned = []
        with hookscope.Monitor(model, ranks=ranks, grads="reduced", every=3) as mon:
            for step in range(7):
                if step == 4 and rank == 1:
                    with torch.no_grad():
                        model.module.head.weight[0, 0] = float("nan")
                opt.zero_grad()
                model(batch(step, rank)).square().mean().backward()
                result = mon.step()
                if result is not None:
                    returned.append([result.step, result.sentinel])
        first = mon.first_nonfinite
        assert first is not None
        found[ranks] = [[first.step, first.phase, first.module, first.tensor, first.rank], returned]
    Path(out, f"sentinel{rank}.json").write_text(json.dumps(found))
    tdist.destroy_process_group()
