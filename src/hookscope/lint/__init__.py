"""Static checks for hook-bypassing calls and hook misuse (``hookscope lint``).

Rules (one class each, see `all_rules`): HS101 ``module.forward(x)``; HS102
``self.forward(x)`` outside ``forward``; HS103 ``super(C, other).forward``;
HS111 discarded hook handle; HS112 hook registered in a loop and never removed;
HS113 deprecated ``register_backward_hook``; HS114 hook registered after
``torch.compile``; HS201 TorchSharp ``x.forward(...)``; HS000 unreadable file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from hookscope.errors import UsageError
from hookscope.lint.engine import formats
from hookscope.lint.engine.config import LintConfig, find_pyproject, load_config
from hookscope.lint.engine.discovery import discover
from hookscope.lint.engine.findings import Edit, Finding
from hookscope.lint.engine.fixes import FileFix, apply_edits, reparses
from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.language import language_of
from hookscope.lint.engine.registry import Rule
from hookscope.lint.engine.runner import LintRun, Progress, run_lint
from hookscope.lint.engine.runner import analyze_file as _analyze_file
from hookscope.lint.engine.source import DEFAULT_MAX_FILE_SIZE, Unreadable, read_bytes
from hookscope.lint.languages import LANGUAGES, all_rules, select_codes

PathLike = str | os.PathLike[str]
_MAX_FIX_ROUNDS = 4


def lint(
    paths: PathLike | Sequence[PathLike],
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    jobs: int | None = None,
    config: bool | PathLike = True,
    progress: Progress | None = None,
    max_file_size: int | None = None,
) -> list[Finding]:
    """Lint files and folders; return the findings sorted by path, line and column.

    Args:
        paths: files or folders (``.py``, ``.pyi`` and ``.cs`` files are read).
        select: rule codes or prefixes to run (default: all), e.g. ``["HS1"]``.
        ignore: codes or prefixes to leave out.
        exclude: extra glob patterns of files or folders to skip.
        jobs: processes in all, the calling one included (it takes a share of the
            files); ``0`` or ``None`` = one per CPU, ``1`` = in-process only.
        config: ``True`` reads ``[tool.hookscope.lint]`` from the nearest
            ``pyproject.toml``; ``False`` reads none; a path reads that file.
            Arguments given here override it.
        progress: called as ``progress(phase, done, total)`` while files are processed.
        max_file_size: files larger than this many bytes are not read (HS000
            "file too large"); default 10,000,000.

    Classes are resolved against the whole project the first path belongs to (the
    folder above it holding ``pyproject.toml``, ``setup.cfg``, ``setup.py`` or
    ``.git``), through an index cached in ``<root>/.hookscope_cache/``; so a file
    gets the same findings whether it is linted alone or with its tree.

    Raises:
        UsageError: an unknown rule code or prefix, an empty path, a bad size.
        LintError: a path does not exist, or the configuration is invalid.
    """
    return lint_run(
        paths,
        select=select,
        ignore=ignore,
        exclude=exclude,
        jobs=jobs,
        config=config,
        progress=progress,
        max_file_size=max_file_size,
    ).findings


def lint_run(
    paths: PathLike | Sequence[PathLike],
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    jobs: int | None = None,
    config: bool | PathLike = True,
    progress: Progress | None = None,
    max_file_size: int | None = None,
) -> LintRun:
    """Like `lint`, but also returns the class index and codes, which `fix` reuses."""
    path_list = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    settings = _config(path_list, config)
    codes = select_codes(
        select if select is not None else settings.select,
        ignore if ignore is not None else settings.ignore,
    )
    excludes = exclude if exclude is not None else settings.exclude or ()
    files = discover(path_list, excludes)
    n_jobs = jobs if jobs is not None else settings.jobs or 0
    if n_jobs < 0:
        raise UsageError(f"jobs must be >= 0, got {n_jobs!r}")
    size = max_file_size if max_file_size is not None else settings.max_file_size
    size = DEFAULT_MAX_FILE_SIZE if size is None else size
    if size <= 0:
        raise UsageError(f"max_file_size must be a number of bytes > 0, got {size!r}")
    return run_lint(
        files, codes, n_jobs, progress, languages=LANGUAGES, exclude=excludes, max_bytes=size
    )


def analyze_file(
    path: str, index: ClassIndex, codes: frozenset[str], max_bytes: int = DEFAULT_MAX_FILE_SIZE
) -> list[Finding]:
    """Every unsuppressed finding of the rules ``codes`` in one file, against ``index``.

    A file that cannot be read, decoded or parsed gives one HS000 finding.
    """
    return _analyze_file(path, index, codes, LANGUAGES, max_bytes)


def render(findings: Sequence[Finding], fmt: str) -> str:
    """``findings`` as ``text``, ``json``, ``sarif`` (every rule's metadata) or ``github``.

    Raises:
        UsageError: an unknown format.
    """
    return formats.render(findings, fmt, all_rules())


def _config(paths: list[PathLike], config: bool | PathLike) -> LintConfig:
    if config is False:
        return LintConfig()
    if config is True:
        start = Path(paths[0]) if paths else Path.cwd()
        return load_config(find_pyproject(start if start.exists() else Path.cwd()))
    return load_config(Path(config))


def fix(run: LintRun) -> list[FileFix]:
    """The fixed text of every file with fixable findings in ``run`` (nothing is written).

    Edits are applied in rounds until none is left, so nested calls are fixed too;
    a round whose result would not parse is dropped, so the text always re-parses.
    Guessed findings (``confidence="guess"``) carry no edits and are never fixed.
    A file that cannot be read or decoded again gets a `FileFix` with ``error`` set
    and no change; the other files are fixed all the same.
    """
    by_path: dict[str, list[Finding]] = {}
    for finding in run.findings:
        if finding.edits and finding.confidence != "guess":
            by_path.setdefault(finding.path, []).append(finding)
    return [_fix_file(path, found, run) for path, found in sorted(by_path.items())]


def _fix_file(path: str, findings: list[Finding], run: LintRun) -> FileFix:
    try:
        data = read_bytes(path, run.max_bytes)
        source = language_of(path, LANGUAGES).decode(data)
    except (Unreadable, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return FileFix(path, "", "", 0, error=str(exc))
    original = source.text
    text, total = original, 0
    for _ in range(_MAX_FIX_ROUNDS):
        new, applied = apply_edits(text, findings)
        if not applied or not reparses(path, new):
            break
        text, total = new, total + applied
        findings = [f for f in _reanalyze(path, text, run) if f.edits]
    return FileFix(path, original, text, total, source)


def _reanalyze(path: str, text: str, run: LintRun) -> list[Finding]:
    language = language_of(path, LANGUAGES)
    return language.analyze(path, text.encode("utf-8"), run.index_of(path), run.codes)


__all__ = [
    "Edit",
    "FileFix",
    "Finding",
    "LintRun",
    "Rule",
    "all_rules",
    "analyze_file",
    "apply_edits",
    "discover",
    "fix",
    "lint",
    "lint_run",
    "render",
    "select_codes",
]
