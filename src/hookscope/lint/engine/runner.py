"""Find files, pre-filter them cheaply, index classes, run the rules in parallel.

Two passes, each spread over ``jobs`` processes (this one and ``jobs - 1`` workers,
see `hookscope.lint.engine.sharing`):

1. every file is read as bytes: its ``class`` lines go into the project-wide class
   index (a regular expression, no parsing) and a substring test decides whether
   it can hold a finding at all (``.forward(`` or ``register_..._hook``);
2. only those candidates are parsed and checked against the merged index.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hookscope.lint.csharp.index import scan_csharp
from hookscope.lint.engine.discovery import discover
from hookscope.lint.engine.findings import Finding
from hookscope.lint.engine.index import ClassIndex, IndexBuilder, scan_definitions
from hookscope.lint.engine.project import Scan, find_root, group_by_root, scan_with_cache
from hookscope.lint.engine.registry import UnreadableFileRule, all_rules
from hookscope.lint.engine.sharing import shared_map
from hookscope.lint.engine.source import (
    DEFAULT_MAX_FILE_SIZE,
    Unreadable,
    decode_python,
    read_bytes,
)
from hookscope.lint.engine.suppress import is_suppressed
from hookscope.lint.python.index.importlists import import_lists
from hookscope.lint.python.index.lookalikes import scan_lookalikes
from hookscope.lint.python.parse.pyfile import PyFile, mention_lines
from hookscope.lint.python.parse.regions import mask
from hookscope.lint.python.rules.analysis import Analysis, PythonRule, WholeFileNeeded

_FORWARD = re.compile(rb"forward\s*\(")
_DOT_FORWARD = re.compile(rb"\.[ \t\r\n\\]*forward\s*\(")
_HOOK = re.compile(rb"register_\w+_hook\s*\(")
_BLANK = b" \t\r\n\\"
_PARALLEL_MIN_FILES = 64

Progress = Callable[[str, int, int], None]


def _scan(path: str, max_bytes: int = DEFAULT_MAX_FILE_SIZE, where: str = "") -> Scan:
    """The first pass over one file: its classes (credited to ``where``) and the pre-filter."""
    try:
        data = read_bytes(path, max_bytes)
    except Unreadable as exc:
        return Scan((), False, str(exc))
    where = where or path
    if path.endswith(".cs"):
        candidate = b"forward" in data and bool(_DOT_FORWARD.search(data))
        found = tuple(scan_csharp(data, where))
        imports = import_lists(data, where) if found else None
        return Scan(found, candidate, "", len(data), imports=imports)
    first = data.find(b"forward")
    # Every _HOOK match holds "register_": a longer word is found (or ruled out) faster.
    candidate = (first >= 0 and _calls_forward(data, first)) or (
        b"register_" in data and _registers_hook(data)
    )
    classes, functions = scan_definitions(data, where)
    # Look-alikes define "def forward": no "forward" at all, none (one pass over the bytes less).
    lookalikes = scan_lookalikes(data, first) if first >= 0 else ()
    # (a script's without definitions too: its module-level calls are callers, see
    # `callers.importers`; not a bare package ``__init__``'s, often long re-export lists)
    script = not path.endswith("__init__.py")
    imports = import_lists(data, where) if classes or functions or script else None
    return Scan(tuple(classes), candidate, "", len(data), tuple(functions), lookalikes, imports)


def _calls_forward(data: bytes, first: int = 0) -> bool:
    """A ``.forward(`` call other than ``super().forward(`` (which no rule flags).

    ``first`` is where the first ``forward`` of ``data`` starts (if known): no call
    starts before the last ``.`` ahead of it (only blanks lie between a call's dot
    and its name), so the search starts there.
    """
    # _DOT_FORWARD finds exactly the _FORWARD matches whose previous non-blank byte is
    # ".", so the Python loop below runs over method calls only, not every "forward(".
    for match in _DOT_FORWARD.finditer(data, max(0, data.rfind(b".", 0, first))):
        i = match.start() - 1
        while i >= 0 and data[i] in _BLANK:
            i -= 1
        if data[max(0, i - 6) : i + 1] != b"super()":
            return True
    return False


def _registers_hook(data: bytes) -> bool:
    """A ``register_..._hook(`` call (not its ``def``)."""
    return any(data[max(0, m.start() - 4) : m.start()] != b"def " for m in _HOOK.finditer(data))


_WORKER: dict[str, object] = {}


def _init_worker(
    index: ClassIndex | None = None,
    codes: frozenset[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
) -> None:
    gc.disable()  # see _gc_paused; worker processes end with the pool
    _WORKER["index"], _WORKER["codes"], _WORKER["max_bytes"] = index, codes, max_bytes


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while files are parsed and checked.

    Parsing allocates millions of AST nodes, which triggers collections that walk
    the whole heap; ASTs and the linter's records hold no reference cycles, so
    reference counting frees them anyway. This halves the time of a big run.

    What the run keeps (the class index: about a million objects on a big tree) is
    moved to the oldest generation before the collector is turned back on;
    otherwise the first young collection after the run would walk all of it
    (40-100 ms), as if it were new.
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
    return analyze_file(path, _WORKER["index"], _WORKER["codes"], _WORKER["max_bytes"])  # type: ignore[arg-type]


def analyze_file(
    path: str,
    index: ClassIndex,
    codes: frozenset[str],
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
) -> list[Finding]:
    """Every unsuppressed finding of the rules ``codes`` in one file.

    A file that cannot be read, decoded or parsed gives one HS000 finding; it never
    stops the run (a 100,000-deep expression included).
    """
    try:
        data = read_bytes(path, max_bytes)
    except Unreadable as exc:
        return _unreadable(path, str(exc), codes)
    try:
        if path.endswith(".cs"):
            return analyze_csharp(path, data, codes, index)
        try:
            source = decode_python(data)
        except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
            return _unreadable(path, f"cannot decode: {exc}", codes)
        return analyze_text(path, source.text, index, codes)
    except (RecursionError, MemoryError):
        return _unreadable(path, "too deeply nested to analyze (RecursionError)", codes)
    except Exception as exc:  # a linter bug must not cost the findings of every other file
        return _unreadable(path, f"internal error, please report it: {exc!r}", codes)


def analyze_text(path: str, text: str, index: ClassIndex, codes: frozenset[str]) -> list[Finding]:
    """Findings of the Python rules ``codes`` in ``text`` (the contents of ``path``).

    The statements that cannot hold a finding are masked out first (see `regions`);
    the whole file is parsed when that fails or a rule was unsure without them.
    """
    lines, mentions = text.split("\n"), mention_lines(text)  # for the mask and the walker
    masked = mask(text, lines, mentions)
    if masked is not None:
        try:
            tree = ast.parse(masked, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None  # parsed again in full below, which reports the error
        if tree is not None:
            pyfile = PyFile.from_tree(path, text, tree, lines=lines, mentions=mentions)
            analysis = Analysis.of(pyfile, index, partial=True)
            findings = _check(analysis, codes)
            if not analysis.needs_full and not analysis.resolver.missed:
                return findings
    try:
        pyfile = PyFile.parse(path, text, lines=lines, mentions=mentions)
    except (RecursionError, MemoryError):
        return _unreadable(path, "too deeply nested to parse (RecursionError)", codes)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return _unreadable(
            path,
            f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}{where}",
            codes,
            getattr(exc, "lineno", 1) or 1,
        )
    return _check(Analysis.of(pyfile, index), codes)


def _check(analysis: Analysis, codes: frozenset[str]) -> list[Finding]:
    """The findings of the rules ``codes``; none when a masked analysis turned out to
    need the whole file (``analysis.needs_full``)."""
    findings: list[Finding] = []
    try:
        for rule in all_rules():
            if rule.code in codes and issubclass(rule, PythonRule):
                found = rule().check(analysis)
                findings.extend(f for f in found if not is_suppressed(f, analysis.file.lines))
    except WholeFileNeeded:
        return []
    return sorted(findings, key=_order)


def analyze_csharp(
    path: str, data: bytes, codes: frozenset[str], index: ClassIndex | None = None
) -> list[Finding]:
    """Unsuppressed findings of the C# rules ``codes`` in ``data`` (the bytes of ``path``).

    ``index`` is the project's class index; without one, the file's own classes.
    """
    from hookscope.lint.csharp.rules import CSharpRule, file_index, parse_csharp

    rules = [r for r in all_rules() if r.code in codes and issubclass(r, CSharpRule)]
    if not rules:
        return []
    root = parse_csharp(data)
    index = index if index is not None else file_index(data)
    lines = data.decode("utf-8", "replace").split("\n")
    findings = [
        f
        for rule in rules
        for f in rule().check(path, data, root, index)
        if not is_suppressed(f, lines)
    ]
    return sorted(findings, key=_order)


def _unreadable(path: str, reason: str, codes: frozenset[str], line: int = 1) -> list[Finding]:
    if UnreadableFileRule.code not in codes:
        return []
    rule = UnreadableFileRule
    message = rule.message.format(reason=reason)
    return [Finding(path, line, 1, line, 1, rule.code, message, rule.severity)]


def _order(finding: Finding) -> tuple[str, int, int, str]:
    return (finding.path, finding.line, finding.col, finding.code)


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
    project: bool = True,
    exclude: Sequence[str] = (),
    max_bytes: int = DEFAULT_MAX_FILE_SIZE,
) -> LintRun:
    """Scan, index and check ``files`` with up to ``jobs`` processes (0 = one per CPU).

    With ``project``, classes are resolved against the project index of each file's
    project root (see `hookscope.lint.engine.project`; a nested project has its own), so
    that a file gets the same findings whether it is linted alone or with its tree. ``jobs`` is capped at
    the number of CPUs and of files.
    """
    cpus = os.cpu_count() or 1
    jobs = min(jobs or cpus, cpus)
    groups = group_by_root(files) if project and files else {None: files}
    runs = []
    with _gc_paused():
        for root, group in groups.items():
            scans, index = _index(group, root, exclude, jobs, max_bytes, progress)
            runs.append(_check_all(group, scans, index, codes, jobs, max_bytes, progress))
    if len(runs) == 1:
        return runs[0]
    # Files of nested projects were checked against their own project's index.
    findings = sorted((f for run in runs for f in run.findings), key=_order)
    indexes = {
        path: run.index for run, group in zip(runs, groups.values(), strict=True) for path in group
    }
    return LintRun(findings, runs[0].index, codes, len(files), max_bytes, indexes)


def project_index(
    path: str, exclude: Sequence[str] = (), max_bytes: int = DEFAULT_MAX_FILE_SIZE
) -> ClassIndex:
    """The class index a file (or a folder's files) is linted against: the project's, cached."""
    files = [] if os.path.isdir(path) else [path]
    return _index(files, find_root(path), exclude, 1, max_bytes, None)[1]


def _index(
    files: list[str],
    root: Path | None,
    exclude: Sequence[str],
    jobs: int,
    max_bytes: int,
    progress: Progress | None,
) -> tuple[dict[str, Scan], ClassIndex]:
    """The scans of ``files`` and the class index (of the project, when there is a root)."""
    if root is None:
        builder = IndexBuilder()
        scans = _scan_all(files, jobs, max_bytes, progress, into=builder)
        return scans, builder.build()
    indexed = (".py", ".cs")  # C# classes resolve C# receivers (HS201)
    project = [os.path.abspath(p) for p in discover([root], exclude) if p.endswith(indexed)]
    given = {f: os.path.abspath(f) for f in files}
    wanted = list(dict.fromkeys([*project, *(p for p in given.values() if p.endswith(indexed))]))

    def scan(paths: list[str]) -> dict[str, Scan]:
        return _scan_all(paths, jobs, max_bytes, progress, root)

    by_abs, index = scan_with_cache(root, wanted, given.values(), scan)
    scans = {f: by_abs.get(absolute) or _scan(f, max_bytes) for f, absolute in given.items()}
    return scans, dataclasses.replace(index, root=str(root))


def _check_all(
    files: list[str],
    scans: dict[str, Scan],
    index: ClassIndex,
    codes: frozenset[str],
    jobs: int,
    max_bytes: int,
    progress: Progress | None,
) -> LintRun:
    findings = [f for p in files if scans[p].error for f in _unreadable(p, scans[p].error, codes)]
    # Biggest first, one file per task: the slowest files start early instead of
    # landing together in one chunk at the end while the other workers idle.
    candidates = sorted(
        (p for p in files if scans[p].candidate and not scans[p].error),
        key=lambda p: -scans[p].size,
    )
    jobs = _workers(jobs, len(files)) if len(candidates) >= 8 else 1

    def check(path: str) -> list[Finding]:
        return analyze_file(path, index, codes, max_bytes)

    init = (index, codes, max_bytes)
    results = shared_map(_analyze_worker, check, candidates, jobs, _init_worker, init)
    findings.extend(f for _, r in _progress(results, len(candidates), "check", progress) for f in r)
    return LintRun(sorted(findings, key=_order), index, codes, len(files), max_bytes)


def _scan_files(
    paths: list[str], max_bytes: int = DEFAULT_MAX_FILE_SIZE, root: str = ""
) -> dict[str, Scan]:
    return {p: _scan(p, max_bytes, os.path.relpath(p, root) if root else p) for p in paths}


def _scan_all(
    files: list[str],
    jobs: int,
    max_bytes: int,
    progress: Progress | None,
    root: Path | None = None,
    into: IndexBuilder | None = None,
) -> dict[str, Scan]:
    """Scan ``files`` in consecutive chunks; their classes and functions go ``into`` an index.

    Small chunks keep the processes busy until the end (each takes the next chunk
    when it is done with one); a chunk joins the index as soon as every chunk before
    it has (the index keeps the file order), while the other processes still scan.
    """
    jobs = _workers(jobs, len(files))
    size = max(1, len(files) // (jobs * 32))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    work = functools.partial(_scan_files, max_bytes=max_bytes, root=str(root or ""))
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
