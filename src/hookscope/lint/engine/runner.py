"""Find files, pre-filter them cheaply, index classes, run the rules in parallel.

Two passes over ``jobs`` processes (`sharing`): every file's bytes go to its front end's
`Language.scan` (definitions for the class index, and whether it can hold a finding);
then only the candidates are analyzed (`Language.analyze`) against the merged index.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hookscope.lint.engine.discovery import discover
from hookscope.lint.engine.findings import Finding, in_order
from hookscope.lint.engine.index import ClassIndex, IndexBuilder
from hookscope.lint.engine.language import Language, language_of
from hookscope.lint.engine.project import Scan, find_root, group_by_root, scan_with_cache
from hookscope.lint.engine.registry import unreadable
from hookscope.lint.engine.sharing import shared_map
from hookscope.lint.engine.source import DEFAULT_MAX_FILE_SIZE, Unreadable, binary, read_bytes

_PARALLEL_MIN_FILES = 64

Progress = Callable[[str, int, int], None]


def _scan(
    path: str,
    languages: Sequence[Language],
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
    where: str = "",
) -> Scan:
    """The first pass over one file: its definitions (credited to ``where``), the pre-filter."""
    try:
        data = read_bytes(path, max_bytes)
    except Unreadable as exc:
        return Scan((), False, str(exc))
    if binary(data):
        return Scan((), False, binary(data))
    return language_of(path, languages).scan(data, where or path, path)


_WORKER: dict[str, object] = {}


def _init_worker(
    index: ClassIndex | None = None,
    codes: frozenset[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
    languages: Sequence[Language] = (),
) -> None:
    gc.disable()  # see _gc_paused; worker processes end with the pool
    _WORKER.update(index=index, codes=codes, max_bytes=max_bytes, languages=languages)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while files are parsed and checked.

    Parsing allocates millions of AST nodes, whose collections walk the whole heap; ASTs
    and the linter's records hold no cycles, so reference counting frees them anyway (this
    halves a big run). What the run keeps (the class index) then goes to the oldest
    generation, or the first young collection would walk all of it (40-100 ms).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()  # every tracked object into the permanent generation,
            gc.unfreeze()  # and back into the oldest one: no object is left out
            gc.enable()


def _analyze_worker(path: str) -> list[Finding]:
    w = _WORKER
    return analyze_file(path, w["index"], w["codes"], w["languages"], w["max_bytes"])  # type: ignore[arg-type]


def analyze_file(
    path: str,
    index: ClassIndex,
    codes: frozenset[str],
    languages: Sequence[Language],
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
) -> list[Finding]:
    """Every unsuppressed finding of the rules ``codes`` in one file.

    A file that cannot be read, decoded or parsed gives one HS000 finding; it never
    stops the run (a 100,000-deep expression included).
    """
    try:
        data = read_bytes(path, max_bytes)
    except Unreadable as exc:
        return unreadable(path, str(exc), codes)
    if binary(data):
        return unreadable(path, binary(data), codes)
    try:
        return language_of(path, languages).analyze(path, data, index, codes)
    except (RecursionError, MemoryError):
        return unreadable(path, "too deeply nested to analyze (RecursionError)", codes)
    except Exception as exc:  # a linter bug must not cost the findings of every other file
        return unreadable(path, f"internal error, please report it: {exc!r}", codes)


@dataclass(frozen=True)
class LintRun:
    """Everything one run produced: findings, the class index and the enabled codes."""

    findings: list[Finding]
    index: ClassIndex
    codes: frozenset[str]
    files: int
    max_bytes: int = DEFAULT_MAX_FILE_SIZE
    indexes: dict[str, ClassIndex] = field(default_factory=dict)

    def index_of(self, path: str) -> ClassIndex:
        """The index ``path`` was checked against (its own project's, when they differ)."""
        return self.indexes.get(path, self.index)


def run_lint(
    files: list[str],
    codes: frozenset[str],
    jobs: int,
    progress: Progress | None = None,
    *,
    languages: Sequence[Language],
    project: bool = True,
    exclude: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
) -> LintRun:
    """Scan, index and check ``files`` with up to ``jobs`` processes (0 = one per CPU,
    capped at the number of CPUs and of files) and the front ends ``languages``.

    With ``project``, classes are resolved against the index of each file's project root
    (`project`; a nested project has its own).
    """
    cpus = os.cpu_count() or 1
    jobs = min(jobs or cpus, cpus)
    groups = group_by_root(files) if project and files else {None: files}
    runs = []
    with _gc_paused():
        for root, group in groups.items():
            # Files under no project root see every file linted with them, those of
            # nested projects too (as a project's index holds its nested projects' files).
            indexed = group if root is not None else files
            scans, index = _index(indexed, root, exclude, jobs, max_bytes, progress, languages)
            runs.append(
                _check_all(group, scans, index, codes, jobs, max_bytes, progress, languages)
            )
    if len(runs) == 1:
        return runs[0]
    # Files of nested projects were checked against their own project's index.
    findings = sorted((f for run in runs for f in run.findings), key=in_order)
    indexes = {
        path: run.index for run, group in zip(runs, groups.values(), strict=True) for path in group
    }
    return LintRun(findings, runs[0].index, codes, len(files), max_bytes, indexes)


def project_index(
    path: str,
    languages: Sequence[Language],
    exclude: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
) -> ClassIndex:
    """The class index a file (or a folder's files) is linted against: the project's, cached."""
    files = [] if os.path.isdir(path) else [path]
    return _index(files, find_root(path), exclude, 1, max_bytes, None, languages)[1]


def _index(
    files: list[str],
    root: Path | None,
    exclude: Sequence[str],
    jobs: int,
    max_bytes: int,
    progress: Progress | None,
    languages: Sequence[Language],
) -> tuple[dict[str, Scan], ClassIndex]:
    """The scans of ``files`` and the class index (of the project, when there is a root)."""
    if root is None:
        builder = IndexBuilder()
        scans = _scan_all(files, jobs, max_bytes, progress, languages, into=builder)
        return scans, builder.build()
    indexed = tuple(suffix for lang in languages for suffix in lang.indexed)
    project = [os.path.abspath(p) for p in discover([root], exclude) if p.endswith(indexed)]
    given = {f: os.path.abspath(f) for f in files}
    wanted = list(dict.fromkeys([*project, *(p for p in given.values() if p.endswith(indexed))]))

    def scan(paths: list[str]) -> dict[str, Scan]:
        return _scan_all(paths, jobs, max_bytes, progress, languages, root)

    by_abs, index = scan_with_cache(root, wanted, given.values(), scan)
    scans = {
        f: by_abs.get(absolute) or _scan(f, languages, max_bytes) for f, absolute in given.items()
    }
    return scans, dataclasses.replace(index, root=str(root))


def _check_all(
    files: list[str],
    scans: dict[str, Scan],
    index: ClassIndex,
    codes: frozenset[str],
    jobs: int,
    max_bytes: int,
    progress: Progress | None,
    languages: Sequence[Language],
) -> LintRun:
    findings = [f for p in files if scans[p].error for f in unreadable(p, scans[p].error, codes)]
    # Biggest first, one file per task: the slowest files start early instead of
    # landing together in one chunk at the end while the other workers idle.
    candidates = sorted(
        (p for p in files if scans[p].candidate and not scans[p].error),
        key=lambda p: -scans[p].size,
    )
    jobs = _workers(jobs, len(files)) if len(candidates) >= 8 else 1

    def check(path: str) -> list[Finding]:
        return analyze_file(path, index, codes, languages, max_bytes)

    init = (index, codes, max_bytes, languages)
    results = shared_map(_analyze_worker, check, candidates, jobs, _init_worker, init)
    findings.extend(f for _, r in _progress(results, len(candidates), "check", progress) for f in r)
    return LintRun(sorted(findings, key=in_order), index, codes, len(files), max_bytes)


def _scan_files(
    paths: list[str],
    languages: Sequence[Language],
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
    root: str = "",
) -> dict[str, Scan]:
    return {
        p: _scan(p, languages, max_bytes, os.path.relpath(p, root) if root else p) for p in paths
    }


def _scan_all(
    files: list[str],
    jobs: int,
    max_bytes: int,
    progress: Progress | None,
    languages: Sequence[Language],
    root: Path | None = None,
    into: IndexBuilder | None = None,
) -> dict[str, Scan]:
    """Scan ``files`` in consecutive chunks; their classes and functions go ``into`` an index.

    Small chunks keep the processes busy until the end; a chunk joins the index (in file
    order) as soon as every chunk before it has, while the others still scan.
    """
    jobs = _workers(jobs, len(files))
    size = max(1, len(files) // (jobs * 32))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    work = functools.partial(
        _scan_files, languages=languages, max_bytes=max_bytes, root=str(root or "")
    )
    parts: list[dict[str, Scan] | None] = [None] * len(chunks)
    done = merged = 0
    for i, part in shared_map(work, work, chunks, jobs, _init_worker):
        parts[i] = part
        done += len(part)
        if progress is not None:
            progress("index", done, len(files))
        while into is not None and merged < len(parts) and (ready := parts[merged]) is not None:
            into.add(
                (e for scan in ready.values() for e in scan.classes),
                (f for scan in ready.values() for f in scan.functions),
                (m for scan in ready.values() for m in scan.lookalikes),
                (scan.imports for scan in ready.values() if scan.imports is not None),
            )
            merged += 1
    return {path: scan for part in parts if part is not None for path, scan in part.items()}


def _workers(jobs: int, files: int) -> int:
    """Processes for ``files`` files: one below `_PARALLEL_MIN_FILES`, never more than files."""
    return 1 if files < _PARALLEL_MIN_FILES else max(1, min(jobs, files))


def _progress(
    items: Iterable[object], total: int, phase: str, progress: Progress | None
) -> Iterable:  # type: ignore[type-arg]
    for done, item in enumerate(items, 1):
        if progress is not None:
            progress(phase, done, total)
        yield item
