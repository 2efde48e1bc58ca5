"""Single-file lint runs on a generated 5,000-file project: cold vs warm project index.

A pre-commit hook or an editor lints one file at a time, yet classes must resolve
against the whole project. The first run scans every file and caches the scans
in ``<root>/.hookscope_cache/``; later runs only ``stat`` the files and read the
cache. This script builds a project in a temporary folder (``pyproject.toml``,
N files in packages of 100, modules whose base class sits in another package),
then times, interleaved, ``hookscope lint FILE`` with the cache removed (cold)
and kept (warm), as subprocesses (interpreter start-up included) and in-process.

Usage::

    python benchmarks/lint_project_speed.py --files 5000 --repeat 7
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEMPLATE = """import torch
from torch import nn
from pkg{base_pkg:03d}.m{base_mod:03d} import Block{base_mod:03d}


class Block{mod:03d}(Block{base_mod:03d}):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)


class Helper{mod:03d}:
    def forward(self, x):
        return x


def run{mod:03d}(x):
    block = Block{mod:03d}()
    helper = Helper{mod:03d}()
    return block.forward(helper.forward(x))
"""
ROOT_BLOCK = "from torch import nn\n\n\nclass Block000(nn.Module):\n    pass\n"


def make_project(root: Path, files: int) -> Path:
    """Write the project; return the last file (its base chain crosses many packages)."""
    (root / "pyproject.toml").write_text("[project]\nname = 'generated'\n", encoding="utf-8")
    for i in range(files):
        pkg, mod = divmod(i, 100)
        folder = root / f"pkg{pkg:03d}"
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
        if pkg == 0:  # the roots of the hierarchies: plain nn.Module subclasses
            text = ROOT_BLOCK.replace("Block000", f"Block{mod:03d}")
        else:  # Block<mod> of package p derives from Block<mod> of package p - 1
            text = (
                TEMPLATE.format(mod=mod, base_pkg=pkg - 1, base_mod=mod)
                .replace(f"class Block{mod:03d}(Block{mod:03d})", f"class Block{mod:03d}(Base)")
                .replace(f"import Block{mod:03d}\n", f"import Block{mod:03d} as Base\n")
            )
        (folder / f"m{mod:03d}.py").write_text(text, encoding="utf-8")
    return root / f"pkg{(files - 1) // 100:03d}" / f"m{(files - 1) % 100:03d}.py"


def cli(target: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "hookscope", "lint", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    return elapsed, proc.stdout


def api(target: Path) -> float:
    from hookscope.lint import lint

    start = time.perf_counter()
    lint(target)
    return time.perf_counter() - start


def compile_bytecode() -> str:
    """Write hookscope's ``.pyc`` files, as ``pip install`` does, and say so.

    With ``PYTHONDONTWRITEBYTECODE`` set and an editable install, every start would
    otherwise recompile hookscope's sources (~0.1 s here), which no installed copy does.
    """
    import compileall
    import os

    import hookscope

    folder = Path(hookscope.__file__).parent
    compileall.compile_dir(str(folder), quiet=1)
    flag = os.environ.get("PYTHONDONTWRITEBYTECODE", "")
    return f"bytecode of {folder} compiled (PYTHONDONTWRITEBYTECODE={flag!r})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(compile_bytecode())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target = make_project(root, args.files)
        cache = root / ".hookscope_cache"
        cold, warm, warm_api = [], [], []
        outputs = set()
        for _ in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            seconds, out = cli(target)
            cold.append(seconds)
            outputs.add(out)
            seconds, out = cli(target)
            warm.append(seconds)
            outputs.add(out)
            warm_api.append(api(target))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "hookscope", "lint", str(root)], capture_output=True)
        tree = time.perf_counter() - start
        print(f"project: {args.files} files; linted: {target.relative_to(root)}")
        print(f"findings identical cold/warm: {len(outputs) == 1}; output: {outputs.pop().strip()}")
        for name, runs in (("cold CLI", cold), ("warm CLI", warm), ("warm in-process", warm_api)):
            print(
                f"{name:16s} median {statistics.median(runs):6.3f} s"
                f"  min {min(runs):6.3f}  max {max(runs):6.3f}  (n={len(runs)})"
            )
        print(f"cold / warm CLI (median): {statistics.median(cold) / statistics.median(warm):.1f}x")
        print(f"whole-tree CLI run, warm cache: {tree:.3f} s")


if __name__ == "__main__":
    main()
