"""The run store against JSONL, the CLI step against the API step, and the report at 10k / 100k steps.

    python benchmarks/run_store.py disk        # bytes/step: store vs JSONL, one GPT-2-shaped run
    python benchmarks/run_store.py cli         # hookscope run --monitor step vs Python Monitor step
    python benchmarks/run_store.py report      # hookscope report time + peak RSS, 10k and 100k steps

``disk``: a 12-layer GPT-2-shaped model (n_embd 64, ~1,960 records a step),
every statistic of every module every step, written to the run store and to
JSONL in the same run (``--steps``, default 200). ``cli``: the model of 36
Linear -> GELU -> LayerNorm blocks, a plain step, a Python ``Monitor`` step
without sinks and a ``hookscope run --monitor --out D`` step, each timed
inside the script over the same steps, the three alternated ``--rounds``
times (default 3). ``report``: a store of 2,000 records a step synthesised
through the public writer (`hookscope.store.StoreWriter`), then ``hookscope
report`` in a child process: wall time and peak RSS (``ru_maxrss``) and the
page size. Figures vary with the machine's load: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent


def _size(path: Path) -> int:
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        if path.is_dir()
        else path.stat().st_size
    )


def disk(steps: int) -> dict[str, float]:
    """Bytes a step of the store and of JSONL, full detail, from one Monitor run."""
    from transformers import GPT2Config, GPT2LMHeadModel

    import hookscope
    from hookscope.sinks import JsonlSink
    from hookscope.sinks.store import StoreSink

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=12,
        n_embd=64,
        n_head=4,
        vocab_size=512,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(config)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randint(0, 512, (2, 32))
    out = Path(tempfile.mkdtemp(prefix="hs-disk-"))
    store, jsonl = StoreSink(out / "monitor"), JsonlSink(out / "monitor.jsonl")
    times = {"store": 0.0, "jsonl": 0.0}
    records = 0
    with hookscope.Monitor(model) as mon:
        for _ in range(steps):
            model(x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
            result = mon.step()
            for name, sink in (("store", store), ("jsonl", jsonl)):
                start = time.perf_counter()
                sink.write(result)
                times[name] += time.perf_counter() - start
            records = len(result.records)
    start = time.perf_counter()
    store.close()
    times["store"] += time.perf_counter() - start
    jsonl.close()
    figures = {
        "records_per_step": records,
        "store_bytes_per_step": _size(out / "monitor") / steps,
        "jsonl_bytes_per_step": _size(out / "monitor.jsonl") / steps,
        "store_write_ms_per_step": 1e3 * times["store"] / steps,
        "jsonl_write_ms_per_step": 1e3 * times["jsonl"] / steps,
    }
    shutil.rmtree(out)
    return figures


TRAIN = """
import json, sys, time
import torch
from torch import nn
torch.manual_seed(0)
steps, mode, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
blocks = [m for _ in range(36) for m in (nn.Linear(32, 32), nn.GELU(), nn.LayerNorm(32))]
model = nn.Sequential(*blocks, nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 32), torch.randn(16, 1)
mon = None
if mode == "api":
    import hookscope
    mon = hookscope.Monitor(model).open()
times = []
for step in range(steps):
    start = time.perf_counter()
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if mon is not None:
        mon.step()
    times.append(time.perf_counter() - start)
json.dump(times, open(out, "w"))
"""


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def cli(steps: int, rounds: int) -> dict[str, float]:
    """Median step (after 20 warm-up steps) of plain, API Monitor and ``hookscope run --monitor``."""
    work = Path(tempfile.mkdtemp(prefix="hs-cli-"))
    script = work / "train.py"
    script.write_text(TRAIN)
    hookscope = str(Path(sys.executable).with_name("hookscope"))
    found: dict[str, list[float]] = {"plain": [], "api": [], "cli": []}
    sizes = []
    for _ in range(rounds):
        for mode in found:
            times = work / f"{mode}.json"
            out = work / "D"
            shutil.rmtree(out, ignore_errors=True)
            base = [str(script), str(steps), mode if mode != "cli" else "plain", str(times)]
            cmd = (
                [hookscope, "run", "--monitor", "--out", str(out), *base]
                if mode == "cli"
                else [sys.executable, *base]
            )
            subprocess.run(cmd, check=True, timeout=1800, capture_output=True)
            found[mode].append(_median(json.loads(times.read_text())[20:]))
            if mode == "cli":
                sizes.append(_size(out) / steps)
    plain, api, run = (_median(found[m]) for m in ("plain", "api", "cli"))
    shutil.rmtree(work)
    return {
        "plain_ms": 1e3 * plain,
        "api_ms": 1e3 * api,
        "cli_ms": 1e3 * run,
        "cli_over_api": run / api,
        "cli_dir_bytes_per_step": _median(sizes),
    }


def synthesise(folder: Path, steps: int, modules: int = 200, seed: int = 0) -> None:
    """A store of ``steps`` steps through `StoreWriter`: ``modules`` activations with 9
    statistics and ``modules / 2`` parameter gradients with 2 (2,000 records a step)."""
    import numpy as np

    from hookscope.monitor.records import StepResult
    from hookscope.store import StoreWriter

    rng = np.random.default_rng(seed)
    stats = ("mean", "std", "min", "max", "absmax", "rms", "zero_frac", "nan_count", "inf_count")
    keys = [("forward", f"blocks.{i // 4}.layer{i % 4}", "output") for i in range(modules)]
    keys += [("param", f"blocks.{i // 2}.layer{i % 2}.weight", "grad") for i in range(modules // 2)]
    writer = StoreWriter(folder)
    for step in range(steps):
        noise = rng.standard_normal(len(keys)).tolist()
        found = {}
        for key, z in zip(keys, noise, strict=True):
            if key[0] == "forward":
                found[key] = {s: z if s != "nan_count" and s != "inf_count" else 0.0 for s in stats}
                found[key]["zero_frac"] = 0.0
            else:
                found[key] = {"norm": abs(z) * math.exp(-step / steps), "mean": z}
        writer.write(StepResult.of(found, step=step, alerts=(), first_nonfinite=None, tensors=()))
    writer.close()


def report(steps: int) -> dict[str, float]:
    """Synthesise ``steps`` steps, then time ``hookscope report`` in a child process."""
    work = Path(tempfile.mkdtemp(prefix="hs-report-"))
    start = time.perf_counter()
    synthesise(work / "monitor", steps)
    made = time.perf_counter() - start
    code = (
        "import resource, sys, time; from hookscope.cli.main import main; t = time.perf_counter(); "
        "rc = main(['report', sys.argv[1], '-o', sys.argv[2]]); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(rc)"
    )
    page = work / "report.html"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(work), str(page)],
        check=True, timeout=1800, capture_output=True, text=True,
    )  # fmt: skip
    seconds, rss_kib = proc.stdout.split()[-2:]
    figures = {
        "steps": steps,
        "records": steps * 2000,
        "store_bytes_per_step": _size(work / "monitor") / steps,
        "synthesis_s": made,
        "report_s": float(seconds),
        "report_peak_rss_mib": int(rss_kib) / 1024,
        "page_mib": page.stat().st_size / 2**20,
    }
    shutil.rmtree(work)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("disk", "cli", "report", "all"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--report-steps", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}", flush=True)
    if args.what in ("disk", "all"):
        print("disk", json.dumps(disk(args.steps)), flush=True)
    if args.what in ("cli", "all"):
        print("cli", json.dumps(cli(args.steps, args.rounds)), flush=True)
    if args.what in ("report", "all"):
        for steps in args.report_steps:
            print("report", json.dumps(report(steps)), flush=True)
    print(
        f"load: {os.getloadavg()}  ru_maxrss(children) KiB: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}"
    )


if __name__ == "__main__":
    main()
