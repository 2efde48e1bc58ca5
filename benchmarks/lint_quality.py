"""Precision and recall of HS101-HS103 on public repositories the lint was not tuned on.

Every ``.forward(...)`` call that does not go through a bare ``super()`` was labelled by
hand, by reading the code, before the lint was tuned on these repositories. The
labels and a one-line reason each are in ``benchmarks/lint_labels.tsv``; the
repositories and commits in `REPOS`. Clone them (any way; e.g.
``git clone https://github.com/<repo> DIR/<name> && git -C DIR/<name> checkout <commit>``)
into one folder and run::

    python benchmarks/lint_quality.py DIR
    python benchmarks/lint_quality.py DIR --sites REPO   # print every site with context
    python benchmarks/lint_quality.py DIR --fresh        # the fresh held-out set
    python benchmarks/lint_quality.py DIR --same [--fresh]   # DIR = FILE = flake8 findings
    python benchmarks/lint_quality.py DIR --labels FILE  # any label file naming its repos in
                                                         # "# repo-commit<TAB>NAME<TAB>OWNER/REPO<TAB>COMMIT" lines

Each repository is linted as a whole tree (its project index), as
``hookscope lint <repo>`` does. The default (confident) set is HS101-HS103;
``--guesses`` adds HS104 (name-based guesses) to show what they would add.
"""

from __future__ import annotations

import argparse
import ast
import csv
import os
import re
import sys
from pathlib import Path

# name -> (GitHub repository, commit labelled)
REPOS: dict[str, tuple[str, str]] = {
    "MONAI": ("Project-MONAI/MONAI", "d388d1c6fec8cb3a0eebee5b5a0b9776ca59ca83"),
    "fairseq": ("facebookresearch/fairseq", "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99"),
    "allennlp": ("allenai/allennlp", "80fb6061e568cb9d6ab5d45b661e86eb61b92c82"),
    "botorch": ("pytorch/botorch", "e390e135c5327f832275d69ac485d7844e68e234"),
    "speechbrain": ("speechbrain/speechbrain", "9c826ef3937bac885c8a6ca86c6889a30f256fb5"),
    "kornia": ("kornia/kornia", "b4f5a78a13891c7ac4c1cd9695941380273e981d"),
}
# The fresh held-out set: labelled (lint_labels_fresh.tsv) after the resolver was tuned
# on the repositories above and before the lint was ever run on these.
FRESH: dict[str, tuple[str, str]] = {
    "DeepSpeed": ("deepspeedai/DeepSpeed", "38327e07f6cd39b63418f60cedd1651b0be3e7c3"),
    "detectron2": ("facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833"),
    "mmcv": ("open-mmlab/mmcv", "a8073c74bf83d62ec36a103f835faa4837fb6585"),
    "pyro": ("pyro-ppl/pyro", "ff6ae1c9572591791aae8842bcd702fcf0b46fd6"),
    "pytorch-lightning": (
        "Lightning-AI/pytorch-lightning",
        "7f0c3436cd3f6ad3753125672024fc415cbcb414",
    ),
    "pytorch_geometric": ("pyg-team/pytorch_geometric", "5c6461b2305ad068a6d61165b3c55852a11aaa41"),
    "trl": ("huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8"),
    "flair": ("flairNLP/flair", "d4ea3777998ba67bfbe6b6b8359e024dcf673c3e"),
    "asteroid": ("asteroid-team/asteroid", "92c8d83a9dbe7c3afd1cd097e31254e0b4f82881"),
    "x-transformers": ("lucidrains/x-transformers", "9252ed7838021ee61e6c5be0930b3a9a88efdf06"),
    "torchtune": ("pytorch/torchtune", "bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1"),
    "composer": ("mosaicml/composer", "6405188805a0054b4551ec49e4919c54c971d0e8"),
}
LABELS = Path(__file__).with_name("lint_labels.tsv")
FRESH_LABELS = Path(__file__).with_name("lint_labels_fresh.tsv")
CODES = ["HS101", "HS102", "HS103"]


def forward_sites(root: Path) -> list[tuple[str, int, ast.Call]]:
    """``(relative path, line, call)`` of every ``.forward(...)`` not on a bare ``super()``."""
    from hookscope.lint import discover

    sites = []
    for path in discover([root]):
        if not path.endswith(".py"):
            continue
        data = Path(path).read_bytes()
        if b"forward" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            value = node.func.value
            bare_super = (
                isinstance(value, ast.Call)
                and getattr(value.func, "id", "") == "super"
                and not value.args
            )
            if node.func.attr == "forward" and not bare_super:
                sites.append((os.path.relpath(path, root), node.lineno, node))
    return sorted(sites, key=lambda s: (s[0], s[1]))


def read_labels(path: Path = LABELS) -> dict[tuple[str, str], tuple[bool | None, str]]:
    """``(repo, path:line) -> (is a hook bypass, reason)``; ``None`` for a ``?`` label
    (the labeller could not tell: left out of the scores)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        return {
            (r[0], r[1]): (None if r[2].strip() == "?" else r[2].strip() == "1", r[3])
            for r in rows
            if r and not r[0].startswith("#")
        }


def read_repos(path: Path) -> dict[str, tuple[str, str]]:
    """The repositories a label file names in its ``# repo-commit<TAB>NAME<TAB>OWNER/REPO
    <TAB>COMMIT`` header lines."""
    repos = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = [f.strip() for f in line.split("\t")]
        if fields[0] == "# repo-commit" and len(fields) >= 4:
            repos[fields[1]] = (fields[2], fields[3])
    if not repos:
        raise SystemExit(f"{path}: no '# repo-commit<TAB>NAME<TAB>OWNER/REPO<TAB>COMMIT' lines")
    return repos


def print_header(width: int) -> None:
    """The column heads of a score table whose repository names take ``width`` characters."""
    print(
        f"{'repository':{width}s} {'sites':>5s} {'bypass':>6s} {'flagged':>7s} {'true':>5s}"
        f" {'precision':>9s} {'recall':>6s}"
    )


def print_row(
    name: str, width: int, sites: int, positives: set[str], found: set[str], totals: list[int]
) -> None:
    """One repository's row; adds its (flagged, true, positives) to ``totals``."""
    tp = len(found & positives)
    print(
        f"{name[:width]:{width}s} {sites:5d} {len(positives):6d} {len(found):7d} {tp:5d}"
        f" {tp / max(len(found), 1):9.3f} {tp / max(len(positives), 1):6.3f}"
    )
    for i, n in enumerate((len(found), tp, len(positives))):
        totals[i] += n


def print_totals(width: int, totals: list[int]) -> tuple[int, int, int]:
    """The ``all`` row; returns the totals (flagged, true, positives)."""
    flagged, tp, positives = totals
    print(
        f"{'all':{width}s} {'':5s} {positives:6d} {flagged:7d} {tp:5d}"
        f" {tp / max(flagged, 1):9.3f} {tp / max(positives, 1):6.3f}"
    )
    return flagged, tp, positives


def score(
    folder: Path, codes: list[str], repos: dict[str, tuple[str, str]], labels_path: Path
) -> tuple[int, int, int]:
    """Print the scores of each repository; return the totals (flagged, true, positives)."""
    from hookscope.lint import lint

    labels = read_labels(labels_path)
    totals = [0, 0, 0]
    print_header(12)
    for name in repos:
        root = folder / name
        if not root.is_dir():
            print(f"  {name}: not found in {folder}, skipped")
            continue
        every = {f"{p}:{line}" for p, line, _ in forward_sites(root)}
        unsure = {s for s in every if labels.get((name, s), (False, ""))[0] is None}
        if unsure:
            print(f"  {name}: {len(unsure)} sites labelled '?' left out")
        sites = every - unsure
        found = {
            f"{os.path.relpath(f.path, root)}:{f.line}"
            for f in lint([root], select=codes, config=False)
        } & sites
        missing = sorted(s for s in sites if (name, s) not in labels)
        if missing:
            print(f"  {name}: {len(missing)} unlabelled sites (other commit?): {missing[:5]}")
        positives = {s for s in sites if labels.get((name, s), (False, ""))[0] is True}
        for miss in sorted(positives - found):
            print(f"  missed {name}/{miss}: {labels[(name, miss)][1]}")
        for wrong in sorted(found - positives):
            print(f"  false positive {name}/{wrong}: {labels.get((name, wrong), (0, '?'))[1]}")
        print_row(name, 12, len(sites), positives, found, totals)
    return print_totals(12, totals)


def same_findings(folder: Path, repos: dict[str, tuple[str, str]]) -> bool:
    """Compare, per repository, the default findings in the files holding ``.forward(``
    sites: whole tree (``hookscope lint DIR``) vs each file alone (``hookscope lint
    FILE``, the pre-commit hook) vs the flake8 plugin. Print and return whether equal."""
    import subprocess

    from hookscope.lint import lint

    equal = True
    for name in repos:
        root = folder / name
        if not root.is_dir():
            print(f"{name:18s} not found in {folder}, skipped")
            continue
        files = sorted({str(root / p) for p, _, _ in forward_sites(root)})
        # flake8 itself skips a file marked noqa for flake8 as a whole (no plugin
        # runs there): those files are compared between DIR and FILE only
        skipped = {os.path.relpath(f, root) for f in files if _flake8_skips(Path(f))}

        def key(path: str, line: int, code: str, root: Path = root) -> tuple[str, int, str]:
            return (os.path.relpath(os.path.abspath(path), root), line, code)

        wanted = {os.path.relpath(f, root) for f in files}
        whole = {key(f.path, f.line, f.code) for f in lint([root], config=False)}
        whole = {k for k in whole if k[0] in wanted}
        alone = {key(f.path, f.line, f.code) for p in files for f in lint([p], config=False)}
        checked = [f for f in files if os.path.relpath(f, root) not in skipped]
        proc = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select=HS", *checked],
            capture_output=True,
            text=True,
            check=False,
        )
        flake8 = set()
        for line in proc.stdout.splitlines():
            path, lineno, _col, rest = line.split(":", 3)
            flake8.add(key(path, int(lineno), rest.split()[0]))
        flake8_whole = {k for k in whole if k[0] not in skipped}
        same = whole == alone and flake8 == flake8_whole
        equal &= same
        note = f" ({len(skipped)} file(s) flake8 skips: file-level noqa)" if skipped else ""
        print(
            f"{name:18s} files {len(files):4d}  whole tree {len(whole):4d}  file by file"
            f" {len(alone):4d}  flake8 {len(flake8):4d}  {'same' if same else 'DIFFERENT'}{note}"
        )
        for what, found, ref in (("file by file", alone, whole), ("flake8", flake8, flake8_whole)):
            for k in sorted(found ^ ref)[:10]:
                print(
                    f"    {what} vs whole tree differ at {k} ({'extra' if k in found else 'missing'})"
                )
    return equal


def _flake8_skips(path: Path) -> bool:
    """flake8's own file-level rule (its ``defaults.NOQA_FILE``, matched at a line's start)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return any(_FLAKE8_NOQA_FILE.match(line) for line in text.splitlines())


_FLAKE8_NOQA_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.I)


def show_sites(root: Path, name: str) -> None:
    """Every site with its enclosing class and the receiver's bindings, for labelling."""
    for path, line, call in forward_sites(root):
        lines = (root / path).read_text(encoding="utf-8", errors="replace").split("\n")
        receiver = ast.unparse(call.func.value)  # type: ignore[attr-defined]
        word = receiver.split(".")[-1].split("[")[0].split("(")[0]
        classes = [t.strip()[:90] for t in lines[:line] if t.lstrip().startswith("class ")]
        binds = [
            f"{i + 1}: {t.strip()[:100]}"
            for i, t in enumerate(lines)
            if word and any(f in t for f in (f"{word} =", f"{word}: ", f"def {word}("))
        ]
        print(f"{name}\t{path}:{line}\t{receiver}\t| {classes[-1] if classes else '-'}")
        print(f"    >> {lines[line - 1].strip()[:120]}")
        for bind in binds[:4]:
            print(f"       {bind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder holding one clone per repository")
    parser.add_argument("--sites", metavar="REPO", help="print the sites of REPO with context")
    parser.add_argument("--guesses", action="store_true", help="count HS104 guesses as findings")
    parser.add_argument(
        "--fresh", action="store_true", help="score the fresh held-out set (FRESH) instead"
    )
    parser.add_argument(
        "--same",
        action="store_true",
        help="check that DIR, FILE and flake8 runs give the same findings instead of scoring",
    )
    parser.add_argument(
        "--labels",
        type=Path,
        metavar="FILE",
        help="score this label file; its '# repo-commit' header lines name the repositories",
    )
    args = parser.parse_args()
    if args.sites:
        show_sites(args.folder / args.sites, args.sites)
        return
    codes = CODES + (["HS104"] if args.guesses else [])
    repos, labels = (FRESH, FRESH_LABELS) if args.fresh else (REPOS, LABELS)
    if args.labels is not None:
        repos, labels = read_repos(args.labels), args.labels
    if args.same:
        sys.exit(0 if same_findings(args.folder, repos) else 1)
    flagged, tp, positives = score(args.folder, codes, repos, labels)
    sys.exit(0 if flagged else 1)


if __name__ == "__main__":
    main()
