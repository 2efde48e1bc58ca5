"""HS201 on TorchSharp's C# sources: precision and recall against hand labels, and speed.

Every ``x.forward(...)`` / ``x?.forward(...)`` call of each tree is labelled in
``benchmarks/labels/<tree name, lower case>_hs201.csv`` by reading the code (trees:
dotnet/TorchSharp at c20b6a1c, dotnet/TorchSharpExamples at 32e047a6; checked after
the resolver was written: LittleLittleCloud/Torchsharp-phi at 6db538bc,
dongfangzhizhu/SAM_TorchSharp at 5cfdc87f, K1T00/TorchSharpUnet at 98c535ca): ``module`` (the
receiver is a TorchSharp module, the call skips its hooks), ``not-module``
(distributions transforms, exported programs) or ``exempt`` (``base``/``this``).
The script checks that the labels cover exactly the calls in the tree, then scores
HS201 (confident) and HS202 (guesses) per folder, and scores the rule before type
resolution (every receiver but ``base``/``this``) the same way.

Speed, paired in one run: whole-tree ``hookscope.lint.lint(..., select=["HS201", "HS202"])``
against the same parse-and-flag pass without type resolution, alternating A/B,
medians and spread. With ``--before-src DIR`` (an earlier hookscope's ``src``, e.g.
``git archive v0.1.0 src | tar -x -C before``) the ``hookscope lint`` command
line of this checkout runs against that one, alternating, in fresh processes.

Usage (checkouts of the labelled repositories, outside this one)::

    python benchmarks/lint_csharp.py TorchSharp TorchSharpExamples --before-src before/src --jobs 2
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from hookscope.lint import discover, lint
from hookscope.lint.csharp.rules import forward_calls, parse_csharp

LABELS = Path(__file__).resolve().parent / "labels"
FORWARD = re.compile(rb"forward\s*\(")  # HS201's pre-filter before type resolution
Site = tuple[str, int, int]  # (path relative to the tree, line, column of the call)


def read_labels(tree: Path) -> dict[Site, str]:
    with (LABELS / f"{tree.name.lower()}_hs201.csv").open(encoding="utf-8", newline="") as handle:
        return {
            (r["path"], int(r["line"]), int(r["col"])): r["label"] for r in csv.DictReader(handle)
        }


def calls(tree: Path) -> list[tuple[Site, bool]]:
    """Every ``.forward(`` call of the tree, and whether its receiver is ``base``/``this``.

    Files are pre-filtered and parsed as HS201 did before type resolution.
    """
    found = []
    for path in discover([tree]):
        data = Path(path).read_bytes()
        if not path.endswith(".cs") or not FORWARD.search(data):
            continue
        lines = data.split(b"\n")
        for call, receiver, _ in forward_calls(parse_csharp(data)):
            row, col = call.start_point
            column = len(lines[row][:col].decode("utf-8", "replace")) + 1
            exempt = receiver.type in ("base_expression", "this_expression", "base", "this")
            found.append(((str(Path(path).relative_to(tree)), row + 1, column), exempt))
    return found


def unresolved_pass(tree: Path) -> list[Site]:
    """HS201 before type resolution: every ``.forward(`` receiver but ``base``/``this``."""
    return [site for site, exempt in calls(tree) if not exempt]


def folder(site: Site) -> str:
    parts = Path(site[0]).parts
    return "/".join(parts[:2]) if parts[0] == "src" else parts[0]


def score(name: str, flagged: list[Site], labels: dict[Site, str]) -> None:
    print(f"\n{name}")
    print("| folder | flagged | true | false | precision | modules found / labelled |")
    print("|---|---|---|---|---|---|")
    folders = sorted({folder(s) for s in labels})
    for where in [*folders, "all"]:
        mine = [s for s in flagged if where in ("all", folder(s))]
        modules = [
            s for s, lab in labels.items() if lab == "module" and where in ("all", folder(s))
        ]
        true = sum(labels.get(s) == "module" for s in mine)
        precision = f"{true / len(mine):.3f}" if mine else "-"
        print(
            f"| {where} | {len(mine)} | {true} | {len(mine) - true} | {precision} "
            f"| {sum(s in set(mine) for s in modules)} / {len(modules)} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", type=Path, nargs="+", help="TorchSharp checkouts")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--before-src", type=Path, help="src folder of an earlier hookscope")
    args = parser.parse_args()
    for tree in args.trees:
        if not quality(tree.resolve(), args.jobs):
            return 1
    for tree in args.trees:
        speed(tree.resolve(), args.jobs, args.repeat)
        if args.before_src:
            command_line(tree.resolve(), args.jobs, args.repeat, args.before_src.resolve())
    return 0


def quality(tree: Path, jobs: int) -> bool:
    labels = read_labels(tree)
    sites = {site for site, _ in calls(tree)}
    if sites != set(labels):
        print(
            f"labels do not match {tree}: unlabelled {sorted(sites - set(labels))}, "
            f"gone {sorted(set(labels) - sites)}"
        )
        return False
    print(f"\n## {tree.name}: {len(labels)} labelled calls {dict(Counter(labels.values()))}")
    findings = lint([tree], select=["HS201", "HS202"], jobs=jobs, config=False)
    by_code: dict[str, list[Site]] = {"HS201": [], "HS202": []}
    for f in findings:
        by_code[f.code].append((str(Path(f.path).relative_to(tree)), f.line, f.col))
    score("HS201 (confident, the default set)", by_code["HS201"], labels)
    score("HS202 (guesses, off by default)", by_code["HS202"], labels)
    score("before: every receiver but base/this", unresolved_pass(tree), labels)
    fixable_guesses = sum(f.fixable for f in findings if f.code == "HS202")
    print(f"\nHS202 findings: {len(by_code['HS202'])}, fixable: {fixable_guesses}")
    examples = [s for s, lab in labels.items() if lab == "module" and "Examples" in s[0]]
    missed = [s for s in examples if s not in set(by_code["HS201"])]
    print(f"examples' submodule calls found: {len(examples) - len(missed)} / {len(examples)}")
    return True


def speed(tree: Path, jobs: int, repeat: int) -> None:
    resolved, plain = [], []
    for _ in range(repeat):  # alternate A/B so load drifts hit both alike
        start = time.perf_counter()
        lint([tree], select=["HS201", "HS202"], jobs=jobs, config=False)
        resolved.append(time.perf_counter() - start)
        start = time.perf_counter()
        unresolved_pass(tree)
        plain.append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(resolved, plain, strict=True)]
    files = sum(p.endswith(".cs") for p in discover([tree]))
    print(f"\n{tree.name}: {files} .cs files, jobs={jobs}, {repeat} paired runs (A/B alternating)")
    for name, times in (
        ("lint --select HS201,HS202 (index + resolution)", resolved),
        ("before", plain),
    ):
        print(
            f"  {name}: median {statistics.median(times):.2f} s "
            f"(min {min(times):.2f}, max {max(times):.2f})"
        )
    print(
        f"  ratio median {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
    )


def command_line(tree: Path, jobs: int, repeat: int, before: Path) -> None:
    """``hookscope lint TREE --select HS2`` (HS201) of this checkout against an earlier one."""
    here = Path(__file__).resolve().parents[1] / "src"
    argv = [sys.executable, "-m", "hookscope", "lint", str(tree), "--select", "HS2"]
    times: dict[str, list[float]] = {"this checkout": [], "before": []}
    for _ in range(repeat):
        for name, src in (("this checkout", here), ("before", before)):
            env = {**os.environ, "PYTHONPATH": str(src)}
            start = time.perf_counter()
            subprocess.run([*argv, "--jobs", str(jobs)], env=env, capture_output=True, check=False)
            times[name].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(*times.values(), strict=True)]
    print(f"  command line, jobs={jobs}, incl. start-up:")
    for name, values in times.items():
        print(f"    {name}: median {statistics.median(values):.2f} s (min {min(values):.2f})")
    print(
        f"    ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )


if __name__ == "__main__":
    sys.exit(main())
