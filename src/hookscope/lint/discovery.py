"""Which files a lint run reads: ``.py``/``.pyi``/``.cs`` files under the given paths."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from hookscope.errors import LintError, UsageError
from hookscope.lint.project import CACHE_DIR

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
    CACHE_DIR,
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
        for folder, dirs, files in os.walk(root):
            rel = os.path.relpath(folder, root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            dirs[:] = sorted(d for d in dirs if not excluded(d, prefix + d))
            found.extend(
                os.path.join(folder, name)
                for name in sorted(files)
                if name.endswith(SUFFIXES) and not excluded(name, prefix + name)
            )
    return list(dict.fromkeys(found))


def _exclusion(patterns: Iterable[str]) -> Callable[[str, str], bool]:
    """``excluded(name, rel)``: whether a glob matches the name or the relative path.

    The same test as ``fnmatch.fnmatch`` per pattern, with all patterns compiled into
    one expression: calling fnmatch for every pattern, file and folder took most of
    the time of a walk over a large tree.
    """
    match = re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in patterns)).match
    normcase = os.path.normcase if os.name == "nt" else str  # identity elsewhere: skip the call

    def excluded(name: str, rel: str) -> bool:
        """``rel`` uses ``/`` and has no ``.`` parts (see `discover`)."""
        return bool(match(normcase(name)) or match(normcase(rel)))

    return excluded
