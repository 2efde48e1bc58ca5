"""Find files, pre-filter them cheaply, index classes, run the rules in parallel.

Two passes, each spread over ``jobs`` processes:

1. every file is read as bytes: its ``class`` lines go into the project-wide class
   index (a regular expression, no parsing) and a substring test decides whether
   it can hold a finding at all (``.forward(`` or ``register_..._hook``);
2. only those candidates are parsed and checked against the merged index.
"""

from __future__ import annotations

import ast
import fnmatch
import gc
import io
import os
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from hookscope.errors import LintError
from hookscope.lint.analysis import Analysis, PythonRule
from hookscope.lint.csharp_index import scan_csharp
from hookscope.lint.findings import Finding
from hookscope.lint.index import ClassEntry, ClassIndex, merge, scan_classes
from hookscope.lint.pyfile import PyFile
from hookscope.lint.regions import mask
from hookscope.lint.registry import UnreadableFileRule, all_rules
from hookscope.lint.suppress import is_suppressed

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    "node_modules",
    "*.egg-info",
)
SUFFIXES = (".py", ".pyi", ".cs")
_FORWARD = re.compile(rb"forward\s*\(")
_DOT_FORWARD = re.compile(rb"\.[ \t\r\n\\]*forward\s*\(")
_HOOK = re.compile(rb"register_\w+_hook\s*\(")
_BLANK = b" \t\r\n\\"
_PARALLEL_MIN_FILES = 64

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class _Scan:
    path: str
    classes: list[ClassEntry]
    candidate: bool
    error: str
    size: int = 0


def discover(paths: Sequence[str | os.PathLike[str]], exclude: Sequence[str] = ()) -> list[str]:
    """The ``.py``/``.pyi``/``.cs`` files under ``paths``, minus ``exclude`` globs.

    Globs match a file's or folder's name or its path relative to the given root.
    Files named explicitly are always included.

    Raises:
        LintError: a path does not exist.
    """
    excluded = _exclusion((*DEFAULT_EXCLUDE, *exclude))
    found: list[str] = []
    for raw in paths:
        root = Path(raw)
        if root.is_file():
            found.append(str(root))
            continue
        if not root.is_dir():
            raise LintError(f"no such file or directory: {str(raw)!r}")
        for folder, dirs, files in os.walk(root):
            rel = os.path.relpath(folder, root)
            dirs[:] = sorted(d for d in dirs if not excluded(d, os.path.join(rel, d)))
            for name in sorted(files):
                if name.endswith(SUFFIXES) and not excluded(name, os.path.join(rel, name)):
                    found.append(os.path.join(folder, name))
    return list(dict.fromkeys(found))


def _exclusion(patterns: Iterable[str]) -> Callable[[str, str], bool]:
    """``excluded(name, rel)``: whether a glob matches the name or the relative path.

    The same test as ``fnmatch.fnmatch`` per pattern, with all patterns compiled into
    one expression: calling fnmatch for every pattern, file and folder took most of
    the time of a walk over a large tree.
    """
    match = re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns)).match

    def excluded(name: str, rel: str) -> bool:
        rel = os.path.normpath(rel).replace(os.sep, "/")
        return bool(match(os.path.normcase(name)) or match(os.path.normcase(rel)))

    return excluded


def _scan(path: str) -> _Scan:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return _Scan(path, [], False, exc.strerror or str(exc))
    if path.endswith(".cs"):
        candidate = b"forward" in data and bool(_DOT_FORWARD.search(data))
        return _Scan(path, scan_csharp(data), candidate, "", len(data))
    candidate = (b"forward" in data and _calls_forward(data)) or (
        b"_hook" in data and _registers_hook(data)
    )
    return _Scan(path, scan_classes(data), candidate, "", len(data))


def _calls_forward(data: bytes) -> bool:
    """A ``.forward(`` call other than ``super().forward(`` (which no rule flags)."""
    # _DOT_FORWARD finds exactly the _FORWARD matches whose previous non-blank byte is
    # ".", so the Python loop below runs over method calls only, not every "forward(".
    for match in _DOT_FORWARD.finditer(data):
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


def _init_worker(index: ClassIndex | None = None, codes: frozenset[str] = frozenset()) -> None:
    gc.disable()  # see _gc_paused; worker processes end with the pool
    _WORKER["index"], _WORKER["codes"] = index, codes


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while files are parsed and checked.

    Parsing allocates millions of AST nodes, which triggers collections that walk
    the whole heap; ASTs and the linter's records hold no reference cycles, so
    reference counting frees them anyway. This halves the time of a big run.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _analyze_worker(path: str) -> list[Finding]:
    return analyze_file(path, _WORKER["index"], _WORKER["codes"])  # type: ignore[arg-type]


def analyze_file(path: str, index: ClassIndex, codes: frozenset[str]) -> list[Finding]:
    """Every unsuppressed finding of the rules ``codes`` in one file."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return _unreadable(path, exc.strerror or str(exc), codes)
    if path.endswith(".cs"):
        return analyze_csharp(path, data, codes, index)
    try:
        text = decode_python(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return _unreadable(path, f"cannot decode: {exc}", codes)
    return analyze_text(path, text, index, codes)


def decode_python(data: bytes) -> str:
    """Decode Python source bytes (UTF-8, or the encoding its coding cookie declares)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)


def analyze_text(path: str, text: str, index: ClassIndex, codes: frozenset[str]) -> list[Finding]:
    """Findings of the Python rules ``codes`` in ``text`` (the contents of ``path``).

    The statements that cannot hold a finding are masked out first (see `regions`);
    the whole file is parsed when that fails or a rule was unsure without them.
    """
    masked = mask(text)
    if masked is not None:
        try:
            tree = ast.parse(masked, filename=path)
        except (SyntaxError, ValueError):
            tree = None
        if tree is not None:
            analysis = Analysis.of(PyFile.from_tree(path, text, tree), index, partial=True)
            findings = _check(analysis, codes)
            if not analysis.needs_full:
                return findings
    try:
        pyfile = PyFile.parse(path, text)
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
    findings: list[Finding] = []
    for rule in all_rules():
        if rule.code in codes and issubclass(rule, PythonRule):
            found = rule().check(analysis)
            findings.extend(f for f in found if not is_suppressed(f, analysis.file.lines))
    return sorted(findings, key=_order)


def analyze_csharp(
    path: str, data: bytes, codes: frozenset[str], index: ClassIndex | None = None
) -> list[Finding]:
    """Unsuppressed findings of the C# rules ``codes`` in ``data`` (the bytes of ``path``).

    ``index`` is the project's class index; without one, the file's own classes.
    """
    from hookscope.lint.csharp import CSharpRule, file_index, parse_csharp

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


def run_lint(
    files: list[str], codes: frozenset[str], jobs: int, progress: Progress | None = None
) -> LintRun:
    """Scan, index and check ``files`` with ``jobs`` processes (0 = one per CPU)."""
    jobs = jobs or os.cpu_count() or 1
    if len(files) < _PARALLEL_MIN_FILES:
        jobs = 1
    with _gc_paused():
        return _run(files, codes, jobs, progress)


def _run(files: list[str], codes: frozenset[str], jobs: int, progress: Progress | None) -> LintRun:
    parts = list(_scan_all(files, jobs, progress))
    index = merge(entry for part in parts for entry in part.classes)
    findings = [f for part in parts for p, why in part.errors for f in _unreadable(p, why, codes)]
    # Biggest first, one file per task: the slowest files start early instead of
    # landing together in one chunk at the end while the other workers idle.
    by_size = sorted((c for part in parts for c in part.candidates), key=lambda c: -c[0])
    candidates = [path for _, path in by_size]
    if jobs == 1 or len(candidates) < 8:
        results: Iterable[list[Finding]] = (analyze_file(p, index, codes) for p in candidates)
        findings.extend(
            f for r in _progress(results, len(candidates), "check", progress) for f in r
        )
    else:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(index, codes)) as pool:
            results = pool.map(_analyze_worker, candidates)
            findings.extend(
                f for r in _progress(results, len(candidates), "check", progress) for f in r
            )
    return LintRun(sorted(findings, key=_order), index, codes, len(files))


@dataclass(frozen=True)
class _Scans:
    """The scans of consecutive files, sent back by a worker as one small message."""

    files: int
    classes: list[ClassEntry]
    candidates: list[tuple[int, str]]  # (size in bytes, path)
    errors: list[tuple[str, str]]  # (path, reason)


def _scan_files(paths: list[str]) -> _Scans:
    scans = [_scan(path) for path in paths]
    return _Scans(
        len(paths),
        [entry for scan in scans for entry in scan.classes],
        [(scan.size, scan.path) for scan in scans if scan.candidate and not scan.error],
        [(scan.path, scan.error) for scan in scans if scan.error],
    )


def _scan_all(files: list[str], jobs: int, progress: Progress | None) -> Iterator[_Scans]:
    """Scan ``files`` in consecutive chunks, in order (the index keeps the file order)."""
    size = max(1, len(files) // (jobs * 8))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    done = 0
    with ExitStack() as stack:
        if jobs == 1:
            parts: Iterable[_Scans] = map(_scan_files, chunks)
        else:
            pool = stack.enter_context(ProcessPoolExecutor(jobs, initializer=_init_worker))
            parts = pool.map(_scan_files, chunks)
        for part in parts:
            done += part.files
            if progress is not None:
                progress("index", done, len(files))
            yield part


def _progress(
    items: Iterable[object], total: int, phase: str, progress: Progress | None
) -> Iterable:  # type: ignore[type-arg]
    for done, item in enumerate(items, 1):
        if progress is not None:
            progress(phase, done, total)
        yield item
