"""Lint cost on one large generated file: does it grow linearly with the file?

The file defines one ``nn.Module`` subclass and then functions of a few lines each,
every one calling ``net.forward(z)`` on a module it builds (an HS101 finding per
function). Each size is linted alone in a fresh process (``hookscope lint FILE``
with no configuration and no cache), so time and peak memory are that run's own::

    python benchmarks/lint_large_file.py                 # 1 MB and 5 MB, and the ratio
    python benchmarks/lint_large_file.py --sizes 0.2 1   # other sizes (MB)
    python benchmarks/lint_large_file.py --profile 1     # cProfile of one 1 MB run

A linear linter takes about 5x the time of the 1 MB file for the 5 MB one.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)

"""

FUNCTION = """
def step_{i}(z):
    \"\"\"Step {i}.\"\"\"
    net = Net()
    net.train()
    y = net.forward(z)
    loss = y.sum() + {i}
    return loss
"""


def generate(path: Path, megabytes: float) -> int:
    """Write the file of about ``megabytes`` MB; return its number of functions."""
    parts = [HEADER]
    size, i = len(HEADER), 0
    while size < megabytes * 1_000_000:
        part = FUNCTION.format(i=i)
        parts.append(part)
        size += len(part)
        i += 1
    path.write_text("".join(parts), encoding="utf-8")
    return i


CHILD = """
import json, resource, sys, time
start = time.perf_counter()
from hookscope.lint import lint
findings = lint([sys.argv[1]], config=False)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "peak_mib": peak, "findings": len(findings)}))
"""


def measure(path: Path) -> dict[str, float]:
    """Lint ``path`` in a fresh process; its time, peak RSS and number of findings."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def profile(path: Path, top: int) -> None:
    """Print the ``top`` functions by cumulative and by own time of one run."""
    from hookscope.lint import lint

    profiler = cProfile.Profile()
    profiler.enable()
    lint([path], config=False)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1.0, 5.0], metavar="MB")
    parser.add_argument("--profile", type=float, metavar="MB", help="cProfile one run instead")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.profile is not None:
            path = Path(tmp) / "generated.py"
            generate(path, args.profile)
            profile(path, args.top)
            return
        rows = []
        for megabytes in args.sizes:
            path = Path(tmp) / f"generated_{megabytes:g}mb.py"
            functions = generate(path, megabytes)
            start = time.perf_counter()
            result = measure(path)
            rows.append((megabytes, functions, result))
            print(
                f"{megabytes:6.2f} MB {functions:7d} sites: {result['seconds']:8.2f} s,"
                f" peak RSS {result['peak_mib']:7.0f} MiB, {result['findings']:.0f} findings"
                f" (process {time.perf_counter() - start:.1f} s)",
                flush=True,
            )
        if len(rows) >= 2:
            (mb0, _, first), (mb1, _, last) = rows[0], rows[-1]
            print(
                f"{mb1:g} MB / {mb0:g} MB: time {last['seconds'] / first['seconds']:.1f}x,"
                f" memory {last['peak_mib'] / first['peak_mib']:.1f}x for {mb1 / mb0:.1f}x the size"
            )


if __name__ == "__main__":
    main()
