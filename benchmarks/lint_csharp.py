"""HS201 on TorchSharp's own C# sources: precision and recall against hand labels, and speed.

Every ``x.forward(...)`` / ``x?.forward(...)`` call of the tree is labelled in
``benchmarks/labels/torchsharp_hs201.csv`` by reading the code: ``module`` (the
receiver is a TorchSharp module, the call skips its hooks), ``not-module``
(distributions transforms, exported programs) or ``exempt`` (``base``/``this``).
The script checks that the labels cover exactly the calls in the tree, then scores
HS201 (confident) and HS202 (guesses) per folder, and scores the rule before type
resolution (every receiver but ``base``/``this``) the same way.

Speed, paired in one run: whole-tree ``hookscope.lint.lint(..., select=["HS2"])``
against the same parse-everything-and-flag pass without type resolution, alternating
A/B, medians and spread.

Usage (TorchSharp fetched outside the repository)::

    python benchmarks/lint_csharp.py /work/fetched/TorchSharp --repeat 5
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from hookscope.lint import discover, lint
from hookscope.lint.csharp import forward_calls, parse_csharp

LABELS = Path(__file__).resolve().parent / "labels" / "torchsharp_hs201.csv"
Site = tuple[str, int, int]  # (path relative to the tree, line, column of the call)


def read_labels() -> dict[Site, str]:
    with LABELS.open(encoding="utf-8", newline="") as handle:
        return {
            (r["path"], int(r["line"]), int(r["col"])): r["label"] for r in csv.DictReader(handle)
        }


def unresolved_pass(tree: Path) -> list[Site]:
    """HS201 before type resolution: every ``.forward(`` receiver but ``base``/``this``."""
    sites = []
    for path in discover([tree]):
        if not path.endswith(".cs"):
            continue
        data = Path(path).read_bytes()
        if b"forward" not in data:
            continue
        lines = data.split(b"\n")
        for call, receiver, _ in forward_calls(parse_csharp(data)):
            if receiver.type not in ("base_expression", "this_expression", "base", "this"):
                row, col = call.start_point
                column = len(lines[row][:col].decode("utf-8", "replace")) + 1
                sites.append((str(Path(path).relative_to(tree)), row + 1, column))
    return sites


def all_calls(tree: Path) -> set[Site]:
    calls = set()
    for path in discover([tree]):
        data = Path(path).read_bytes()
        if path.endswith(".cs") and b"forward" in data:
            lines = data.split(b"\n")
            for call, _, _ in forward_calls(parse_csharp(data)):
                row, col = call.start_point
                column = len(lines[row][:col].decode("utf-8", "replace")) + 1
                calls.add((str(Path(path).relative_to(tree)), row + 1, column))
    return calls


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
    parser.add_argument("tree", type=Path, help="a TorchSharp checkout")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    tree = args.tree.resolve()
    labels = read_labels()
    calls = all_calls(tree)
    if calls != set(labels):
        print(
            f"labels do not match the tree: unlabelled {sorted(calls - set(labels))}, "
            f"gone {sorted(set(labels) - calls)}"
        )
        return 1
    print(f"{len(labels)} labelled calls: {dict(Counter(labels.values()))}")

    findings = lint([tree], select=["HS2"], jobs=args.jobs, config=False)
    by_code: dict[str, list[Site]] = {"HS201": [], "HS202": []}
    for f in findings:
        by_code[f.code].append((str(Path(f.path).relative_to(tree)), f.line, f.col))
    score("HS201 (confident, the default set)", by_code["HS201"], labels)
    score("HS202 (guesses, off by default)", by_code["HS202"], labels)
    score("before: every receiver but base/this", unresolved_pass(tree), labels)
    fixable_guesses = sum(f.fixable for f in findings if f.code == "HS202")
    print(f"\nHS202 findings: {len(by_code['HS202'])}, fixable: {fixable_guesses}")
    examples = [
        s for s, lab in labels.items() if lab == "module" and s[0].startswith("src/Examples")
    ]
    missed = [s for s in examples if s not in set(by_code["HS201"])]
    print(f"examples' submodule calls found: {len(examples) - len(missed)} / {len(examples)}")

    resolved, plain = [], []
    for _ in range(args.repeat):  # alternate A/B so load drifts hit both alike
        start = time.perf_counter()
        lint([tree], select=["HS2"], jobs=args.jobs, config=False)
        resolved.append(time.perf_counter() - start)
        start = time.perf_counter()
        unresolved_pass(tree)
        plain.append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(resolved, plain, strict=True)]
    files = sum(p.endswith(".cs") for p in discover([tree]))
    print(f"\nspeed over {files} .cs files, jobs={args.jobs}, {args.repeat} paired runs:")
    print(
        f"  hookscope lint --select HS2 (index + resolution): median {statistics.median(resolved):.2f} s "
        f"(min {min(resolved):.2f}, max {max(resolved):.2f})"
    )
    print(
        f"  parse + flag without resolution:                median {statistics.median(plain):.2f} s "
        f"(min {min(plain):.2f}, max {max(plain):.2f})"
    )
    print(
        f"  ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
