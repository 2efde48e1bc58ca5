"""Save the lint's findings on labelled repositories, score them, and diff two saves.

A change to the resolver should change findings only where it can name why. Save
the findings (JSON, one file per repository) before the change, save them again
after, and diff the two: every difference is printed per repository and site, with
the site's hand label (bypass 1 / not 0 / unsure ?) and reason where one exists, so
each one reads as a fixed miss, a removed false finding, a regression or a change
of wording. The repositories are one folder per repository name, as
``lint_quality.py`` expects (``# repo-commit`` lines of a label file name them)::

    python benchmarks/lint_diff.py save DIR OUT --labels benchmarks/lint_labels_fresh16a.tsv
    python benchmarks/lint_diff.py score OUT --labels benchmarks/lint_labels_fresh16a.tsv
    python benchmarks/lint_diff.py diff OLD NEW --labels benchmarks/lint_labels_fresh16a.tsv

``save`` runs every rule, HS104 guesses included, on each repository as a whole tree
(``hookscope lint --select HS,HS104 REPO`` with no configuration) and also records
the ``.forward(`` sites that ``lint_quality.forward_sites`` enumerates, so that
``score`` gives the precision and recall of HS101-HS103 (as ``lint_quality.py``
does) from the saved files alone. ``--labels`` may be given several times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from lint_quality import (
    forward_sites,
    print_header,
    print_row,
    print_totals,
    read_labels,
    read_repos,
)

SCORED = ("HS101", "HS102", "HS103")
Labels = dict[tuple[str, str], tuple[bool | None, str]]


def save(folder: Path, out: Path, names: list[str], repos: dict[str, tuple[str, str]]) -> None:
    """Lint each repository of ``names`` under ``folder``; write ``out/NAME.json``."""
    from hookscope.lint import all_rules, lint

    codes = sorted(rule.code for rule in all_rules())
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        root = folder / name
        if not root.is_dir():
            print(f"{name}: not found in {folder}, skipped")
            continue
        start = time.perf_counter()
        findings = lint([root], select=codes, config=False)
        seconds = time.perf_counter() - start
        rows = sorted(
            ({**f.to_dict(), "path": os.path.relpath(f.path, root)} for f in findings),
            key=lambda r: (r["path"], r["line"], r["col"], r["code"]),
        )
        sites = [f"{p}:{line}" for p, line, _ in forward_sites(root)]
        repo, commit = repos.get(name, ("", ""))
        record = {
            "name": name,
            "repo": repo,
            "commit": commit,
            "codes": codes,
            "seconds": round(seconds, 3),
            "sites": sites,
            "findings": rows,
        }
        (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"{name}: {len(rows)} findings, {len(sites)} sites, {seconds:.1f} s, peak {peak} MiB")


def load(out: Path) -> dict[str, dict]:
    """``name -> saved record`` of every ``*.json`` in ``out``."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("*.json"))}


def _label(labels: Labels, name: str, site: str) -> str:
    label = labels.get((name, site))
    if label is None:
        return "unlabelled"
    verdict = "?" if label[0] is None else str(int(label[0]))
    return f"label {verdict}: {label[1]}"


def score(
    records: dict[str, dict], labels: Labels, names: list[str], verbose: bool = False
) -> tuple[int, int, int]:
    """Print the per-repository precision and recall of HS101-HS103; return the totals."""
    totals = [0, 0, 0]
    print_header(24)
    for name in names:
        if name not in records:
            print(f"  {name}: no saved findings, skipped")
            continue
        record = records[name]
        every = set(record["sites"])
        sites = {s for s in every if labels.get((name, s), (False, ""))[0] is not None}
        found = {
            f"{f['path']}:{f['line']}" for f in record["findings"] if f["code"] in SCORED
        } & sites
        positives = {s for s in sites if labels.get((name, s), (False, ""))[0] is True}
        unlabelled = sorted(s for s in sites if (name, s) not in labels)
        if unlabelled:
            print(f"  {name}: {len(unlabelled)} unlabelled sites (scored as 0): {unlabelled[:5]}")
        for site in sorted(positives - found) if verbose else []:
            print(f"  missed {name}/{site}: {labels[(name, site)][1]}")
        for site in sorted(found - positives) if verbose else []:
            print(f"  false finding {name}/{site}: {_label(labels, name, site)}")
        print_row(name, 24, len(sites), positives, found, totals)
    return print_totals(24, totals)


def _keyed(record: dict) -> dict[tuple[str, int, int, str], dict]:
    return {(f["path"], f["line"], f["col"], f["code"]): f for f in record["findings"]}


def _kind(labels: Labels, name: str, site: str, code: str, added: bool) -> str:
    """Name a difference: what an added or removed finding at a labelled site means."""
    label = labels.get((name, site))
    if code not in SCORED or label is None or label[0] is None:
        return "added" if added else "removed"
    if label[0]:
        return "FIXED MISS" if added else "REGRESSION (lost true finding)"
    return "NEW FALSE FINDING" if added else "removed false finding"


def diff(old: dict[str, dict], new: dict[str, dict], labels: Labels) -> Counter[str]:
    """Print every difference between two saves; return the count of each kind."""
    kinds: Counter[str] = Counter()
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            print(f"{name}: only in {'old' if name in old else 'new'} save")
            kinds["repository in one save only"] += 1
            continue
        before, after = _keyed(old[name]), _keyed(new[name])
        lines = []
        for key in sorted(set(before) | set(after)):
            path, line, _col, code = key
            site = f"{path}:{line}"
            if key not in after or key not in before:
                kind = _kind(labels, name, site, code, added=key in after)
                text = (after.get(key) or before[key])["resolution"]
                lines.append(f"  {kind:30s} {code} {site}  [{_label(labels, name, site)}]  {text}")
                kinds[kind] += 1
                continue
            changed = [
                field
                for field in ("message", "confidence", "resolution", "fixable", "end_col")
                if before[key][field] != after[key][field]
            ]
            if changed:
                kinds["changed " + "/".join(changed)] += 1
                lines.append(f"  {'changed ' + '/'.join(changed):30s} {code} {site}")
                for field in changed:
                    lines.append(f"      - {before[key][field]}\n      + {after[key][field]}")
        if old[name]["sites"] != new[name]["sites"]:
            lines.append("  the .forward( sites differ (another commit?)")
            kinds["sites differ"] += 1
        if lines:
            print(f"{name}:")
            print("\n".join(lines))
    print("differences:", dict(sorted(kinds.items())) or "none")
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_save = sub.add_parser("save", help="lint each repository and save its findings")
    p_save.add_argument("folder", type=Path, help="folder holding one clone per repository")
    p_save.add_argument("out", type=Path, help="folder for the NAME.json files")
    p_score = sub.add_parser("score", help="precision and recall from saved findings")
    p_score.add_argument("out", type=Path)
    p_score.add_argument(
        "-v", "--verbose", action="store_true", help="list misses and false findings"
    )
    p_diff = sub.add_parser("diff", help="every difference between two saves")
    p_diff.add_argument("old", type=Path)
    p_diff.add_argument("new", type=Path)
    for p in (p_save, p_score, p_diff):
        p.add_argument(
            "--labels",
            type=Path,
            action="append",
            default=[],
            metavar="FILE",
            help="a label file with '# repo-commit' lines (repeatable)",
        )
    args = parser.parse_args()
    repos: dict[str, tuple[str, str]] = {}
    labels: Labels = {}
    for path in args.labels:
        repos.update(read_repos(path))
        labels.update(read_labels(path))
    if args.command == "save":
        names = list(repos) or sorted(p.name for p in args.folder.iterdir() if p.is_dir())
        save(args.folder, args.out, names, repos)
    elif args.command == "score":
        records = load(args.out)
        score(records, labels, list(repos) or sorted(records), args.verbose)
    else:
        kinds = diff(load(args.old), load(args.new), labels)
        bad = kinds["REGRESSION (lost true finding)"] + kinds["NEW FALSE FINDING"]
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
