"""The project index: every file of the project scanned once, cached on disk.

Whatever is linted — a folder, one file, the files the pre-commit hook passes, the
one file flake8 hands its plugin — classes are resolved against the same index:
the scans of every ``.py`` file under the project root (the nearest folder above
the linted path holding ``pyproject.toml``, ``setup.cfg``, ``setup.py`` or
``.git``). So a file gets the same findings however it is linted.

Scans are cached in ``<root>/.hookscope_cache/lint-index.json`` (ignored by git
through its own ``.gitignore``), keyed by path and invalidated by modification
time and size; only changed files are read again. The cache is JSON, never
pickle: it sits in the project folder, and loading it must not run code. A cache
that cannot be read or written is rebuilt or skipped silently.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookscope.lint.index import ClassEntry, FunctionEntry

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
CACHE_DIR = ".hookscope_cache"
_CACHE_FILE = "lint-index.json"
_VERSION = 3  # bump whenever what a scan records changes
_INSTALLED = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class Scan:
    """What the first pass learns from one file's bytes.

    Attributes:
        classes: its ``class`` statements (see `scan_classes`).
        candidate: whether it can hold a finding (the text pre-filter).
        error: why it could not be read (empty when it could).
        size: its size in bytes.
        functions: its top-level functions (see `scan_functions`).
    """

    classes: tuple[ClassEntry, ...]
    candidate: bool
    error: str = ""
    size: int = 0
    functions: tuple[FunctionEntry, ...] = ()


Scanner = Callable[[list[str]], dict[str, Scan]]


def find_root(path: str | os.PathLike[str]) -> Path | None:
    """The nearest folder at or above ``path`` holding a project marker, or ``None``.

    Installed code (under ``site-packages``) belongs to no project: the folder that
    holds the virtual environment is not its project.
    """
    folder = Path(os.path.abspath(path))
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        if candidate.name in _INSTALLED:
            return None
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return None


def scan_with_cache(root: Path, files: Iterable[str], scan: Scanner) -> dict[str, Scan]:
    """Scans of ``files`` (absolute paths under ``root``), reusing the cached ones.

    ``scan`` is called once with every file whose cached entry is missing or stale;
    the cache is rewritten only when something changed.
    """
    cached = _load(root)
    stamps: dict[str, tuple[int, int]] = {}
    for path in files:
        try:
            stat = os.stat(path)
        except OSError:
            continue  # gone since discovery: scanned (and reported) as given
        stamps[path] = (stat.st_mtime_ns, stat.st_size)
    fresh = {
        p: cached[p][1] for p, stamp in stamps.items() if p in cached and cached[p][0] == stamp
    }
    stale = [p for p in stamps if p not in fresh]
    if stale:
        fresh.update(scan(stale))
    if stale or len(cached) != len(stamps):
        _save(root, {p: (stamps[p], fresh[p]) for p in stamps if p in fresh})
    return fresh


def _cache_path(root: Path) -> Path:
    return root / CACHE_DIR / _CACHE_FILE


def _load(root: Path) -> dict[str, tuple[tuple[int, int], Scan]]:
    try:
        data = json.loads(_cache_path(root).read_text(encoding="utf-8"))
        if data.get("version") != _VERSION or data.get("root") != str(root):
            return {}
        return {
            path: (
                (mtime, size),
                Scan(_entries(classes), bool(candidate), "", size, _functions(fns)),
            )
            for path, (mtime, size, candidate, classes, fns) in data["files"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}  # no cache, or one written by another version: rebuild it


def _entries(raw: list[Any]) -> tuple[ClassEntry, ...]:
    return tuple(
        (name, tuple(bases), tuple((a, t) for a, t in attrs), where)
        for name, bases, attrs, where in raw
    )


def _functions(raw: list[Any]) -> tuple[FunctionEntry, ...]:
    return tuple((name, annotation, tuple(calls), where) for name, annotation, calls, where in raw)


def _save(root: Path, entries: dict[str, tuple[tuple[int, int], Scan]]) -> None:
    files = {
        path: [
            mtime,
            size,
            scan.candidate,
            [list(entry) for entry in scan.classes],
            [list(entry) for entry in scan.functions],
        ]
        for path, ((mtime, size), scan) in entries.items()
        if not scan.error  # unreadable files are read (and reported) again next time
    }
    folder = root / CACHE_DIR
    target = _cache_path(root)
    tmp = target.with_name(f"{_CACHE_FILE}.{os.getpid()}.tmp")
    try:
        folder.mkdir(exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# written by hookscope lint\n*\n", encoding="utf-8")
        data = {"version": _VERSION, "root": str(root), "files": files}
        tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, target)  # atomic: a concurrent reader sees the old or the new file
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only project: lint without a cache
