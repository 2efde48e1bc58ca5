"""Which files a lint run reads: ``.py``/``.pyi``/``.cs`` files under the given paths."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from hookscope.errors import LintError, UsageError
from hookscope.lint.engine.project import CACHE_DIR

DEFAULT_EXCLUDE = (
    *(".git", ".hg", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache"),
    *("node_modules", "*.egg-info", CACHE_DIR),
)
SUFFIXES = (".py", ".pyi", ".cs")


def discover(paths: Sequence[str | os.PathLike[str]], exclude: Sequence[str] = ()) -> list[str]:
    """The ``.py``/``.pyi``/``.cs`` files under ``paths``, minus ``exclude`` globs.

    Globs match a file's or folder's name or its path relative to the given root.
    Files named explicitly are always included (one that is not a regular file is
    reported as HS000 when scanned, never read).

    Raises:
        UsageError: an empty path (``""`` would otherwise mean the current folder).
        LintError: a path does not exist.
    """
    excluded = _exclusion((*DEFAULT_EXCLUDE, *exclude))
    found: list[str] = []
    for raw in paths:
        if not os.fspath(raw):
            raise UsageError("empty path '': name a file or folder (use '.' for this folder)")
        root = Path(raw)
        if root.exists() and not root.is_dir():
            found.append(str(root))
            continue
        if not root.is_dir():
            raise LintError(f"no such file or directory: {str(raw)!r}")
        _walk(str(root), "", excluded, found)
    return list(dict.fromkeys(found))


def _walk(folder: str, prefix: str, excluded: Callable[[str, str], bool], found: list[str]) -> None:
    """Add the files of ``folder`` and, recursively, of its sub-folders to ``found``.

    What ``os.walk`` top-down with sorted, pruned sub-folders gives, in that order, but
    typed by ``os.scandir``'s entries (no ``stat``); ``prefix`` is ``folder`` relative to
    the given root (``""`` or ``"a/b/"``). An unreadable folder is skipped.
    """
    dirs: list[str] = []
    files: list[str] = []
    links: set[str] = set()  # linked folders: listed (and excluded) but not entered
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    dirs.append(entry.name)
                    if entry.is_symlink():
                        links.add(entry.name)
                else:
                    files.append(entry.name)
    except OSError:
        return
    found.extend(
        os.path.join(folder, name)
        for name in sorted(files)
        if name.endswith(SUFFIXES) and not excluded(name, prefix + name)
    )
    for name in sorted(dirs):
        if name not in links and not excluded(name, prefix + name):
            _walk(os.path.join(folder, name), f"{prefix}{name}/", excluded, found)


def _exclusion(patterns: Iterable[str]) -> Callable[[str, str], bool]:
    """``excluded(name, rel)``: whether a glob matches the name or the relative path.

    ``fnmatch.fnmatch``'s test with all patterns compiled into one expression (a call per
    pattern, file and folder took most of the time of a walk over a large tree).
    """
    match = re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns)).match
    normcase = os.path.normcase if os.name == "nt" else str  # identity elsewhere: skip the call

    def excluded(name: str, rel: str) -> bool:
        """``rel`` uses ``/`` and has no ``.`` parts (see `discover`)."""
        return bool(match(normcase(name)) or match(normcase(rel)))

    return excluded
