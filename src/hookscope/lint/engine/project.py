"""The project index: every file of the project scanned once, cached on disk.

However a file is linted (a folder, one file, pre-commit, flake8), its classes are
resolved against the scans of every file under its project root (the nearest folder
holding ``pyproject.toml``, ``setup.cfg``, ``setup.py`` or ``.git``), so it gets the same
findings. Scans are cached in ``<root>/.hookscope_cache/lint-index.json`` by path,
modification time and size. The cache is JSON, never pickle (loading it must not run
code); one that cannot be read or written is rebuilt or skipped silently.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookscope.lint.engine.index import ClassEntry, ClassIndex, FunctionEntry, ImportLists, merge

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
CACHE_DIR = ".hookscope_cache"
_CACHE_FILE = "lint-index.json"
_VERSION = 13  # bump whenever what a scan records changes
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
        lookalikes: module-only methods a plain class defines (see `scan_lookalikes`).
        imports: its from-import lists (see `importlists.import_lists`; a script
            without definitions has them too), else ``None``.
    """

    classes: tuple[ClassEntry, ...]
    candidate: bool
    error: str = ""
    size: int = 0
    functions: tuple[FunctionEntry, ...] = ()
    lookalikes: tuple[str, ...] = ()
    imports: ImportLists | None = None


Scanner = Callable[[list[str]], dict[str, Scan]]


def find_root(
    path: str | os.PathLike[str], known: dict[str, Path | None] | None = None
) -> Path | None:
    """The nearest folder at or above ``path`` holding a project marker, or ``None``.

    Installed code (under ``site-packages``) belongs to no project. ``known`` (folder →
    root) is filled on the way, so that each folder of a tree is looked at once.
    """
    folder = os.path.abspath(path)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return _root_of(folder, known if known is not None else {})


def _root_of(folder: str, seen: dict[str, Path | None]) -> Path | None:
    """`find_root` of an absolute, normalized folder; ``seen`` is its ``known``."""
    passed: list[str] = []
    root: Path | None = None
    while True:
        if folder in seen:
            root = seen[folder]
            break
        passed.append(folder)
        if os.path.basename(folder) in _INSTALLED:
            break
        # os.access answers like os.path.exists, without raising (and catching) an
        # error for every marker that is not there.
        if any(os.access(os.path.join(folder, marker), os.F_OK) for marker in ROOT_MARKERS):
            root = Path(folder)
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for key in passed:
        seen[key] = root
    return root


def group_by_root(files: Iterable[str]) -> dict[Path | None, list[str]]:
    """``files`` grouped by their project root (`find_root`), in order; one look-up per folder."""
    seen: dict[str, Path | None] = {}  # absolute folder -> root
    roots: dict[str, Path | None] = {}  # folder as written -> root
    groups: dict[Path | None, list[str]] = {}
    for path in files:
        folder = os.path.dirname(path)
        if folder not in roots:
            roots[folder] = _root_of(os.path.abspath(folder), seen)
        groups.setdefault(roots[folder], []).append(path)
    return groups


def scan_with_cache(
    root: Path, files: Iterable[str], given: Iterable[str], scan: Scanner
) -> tuple[dict[str, Scan], ClassIndex]:
    """The scans of ``given`` and the index of ``files`` (absolute paths), cached.

    ``scan`` is called once with every file whose cached entry is missing or stale; when
    nothing changed, a warm run costs a ``stat`` per file and one JSON read.
    """
    raw, saved_index = _load(root)
    stamps: dict[str, tuple[int, int]] = {}
    for path in files:
        try:
            info = os.stat(path)
        except OSError:
            continue  # gone since discovery: scanned (and reported) as given
        stamps[path] = (info.st_mtime_ns, info.st_size)
    stale = [p for p, stamp in stamps.items() if p not in raw or tuple(raw[p][:2]) != stamp]
    fresh = scan(stale) if stale else {}

    def scan_of(path: str) -> Scan:
        return fresh[path] if path in fresh else _scan_from(raw[path])

    if not stale and len(raw) == len(stamps) and saved_index is not None:
        index = saved_index
    else:
        scans = [scan_of(p) for p in stamps if p in fresh or p in raw]
        index = merge(
            (e for s in scans for e in s.classes),
            (f for s in scans for f in s.functions),
            (m for s in scans for m in s.lookalikes),
            (s.imports for s in scans if s.imports is not None),
        )
        kept = {p: _raw(stamp, scan_of(p)) for p, stamp in stamps.items() if p in fresh or p in raw}
        _save(root, {p: r for p, r in kept.items() if r is not None}, index)
    return {p: scan_of(p) for p in given if p in fresh or p in raw}, index


def _cache_path(root: Path) -> Path:
    return root / CACHE_DIR / _CACHE_FILE


def _load(root: Path) -> tuple[dict[str, list[Any]], ClassIndex | None]:
    try:
        import json  # here: runs outside any project (installed trees) never need it

        data = json.loads(_cache_path(root).read_text(encoding="utf-8"))
        if data.get("version") != _VERSION or data.get("root") != str(root):
            return {}, None
        files = data["files"]
        if not isinstance(files, dict):
            return {}, None
        return files, _index_from(data["index"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}, None  # no cache, or one written by another version: rebuild it


def _scan_from(raw: list[Any]) -> Scan:
    _, size, candidate, classes, functions, lookalikes, imports = raw
    return Scan(
        tuple((n, tuple(b), tuple((a, t) for a, t in attrs), w) for n, b, attrs, w in classes),
        bool(candidate),
        "",
        size,
        tuple((n, ann, tuple(calls), w) for n, ann, calls, w in functions),
        tuple(lookalikes),
        None if imports is None else _lists_from(imports),
    )


def _lists_from(raw: list[str]) -> ImportLists:
    # JSON holds text: the bytes are kept as latin-1 characters, one per byte
    where, listed, modules = raw
    return where, listed.encode("latin-1"), modules.encode("latin-1")


def _lists_raw(lists: ImportLists) -> list[str]:
    where, listed, modules = lists
    return [where, listed.decode("latin-1"), modules.decode("latin-1")]


def _raw(stamp: tuple[int, int], scan: Scan) -> list[Any] | None:
    if scan.error:
        return None  # unreadable files are read (and reported) again next time
    classes = [list(entry) for entry in scan.classes]
    functions = [list(entry) for entry in scan.functions]
    imports = None if scan.imports is None else _lists_raw(scan.imports)
    return [*stamp, scan.candidate, classes, functions, list(scan.lookalikes), imports]


def _index_from(raw: dict[str, Any]) -> ClassIndex:
    return ClassIndex(
        {name: tuple(tuple(b) for b in variants) for name, variants in raw["bases"].items()},
        raw["attrs"],
        raw["where"],
        {name: tuple((tuple(b), w) for b, w in defs) for name, defs in raw["defs"].items()},
        {
            name: tuple((n, ann, tuple(calls), w) for n, ann, calls, w in entries)
            for name, entries in raw["functions"].items()
        },
        lookalike_methods=frozenset(raw["lookalike_methods"]),
        import_lists=tuple(_lists_from(lists) for lists in raw["import_lists"]),
    )


def _save(root: Path, files: dict[str, list[Any]], index: ClassIndex) -> None:
    folder = root / CACHE_DIR
    target = _cache_path(root)
    tmp = target.with_name(f"{_CACHE_FILE}.{os.getpid()}.tmp")
    try:
        folder.mkdir(exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# written by hookscope lint\n*\n", encoding="utf-8")
        data = {
            "version": _VERSION,
            "root": str(root),
            "files": files,
            "index": {
                "bases": index.bases,
                "attrs": index.attrs,
                "where": index.where,
                "defs": index.defs,
                "functions": index.functions,
                "lookalike_methods": sorted(index.lookalike_methods),
                "import_lists": [_lists_raw(lists) for lists in index.import_lists or ()],
            },
        }
        import json

        tmp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, target)  # atomic: a concurrent reader sees the old or the new file
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only project: lint without a cache
