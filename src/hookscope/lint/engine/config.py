"""Settings from ``[tool.hookscope.lint]`` in ``pyproject.toml``: ``select``, ``ignore``,
``exclude`` (lists of strings), ``jobs`` (int) and ``max-file-size`` (bytes). Command-line
options override them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookscope.errors import LintError

_KEYS = {"select", "ignore", "exclude", "jobs", "max-file-size"}


@dataclass(frozen=True)
class LintConfig:
    """Lint settings; ``None`` means "not set"."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    jobs: int | None = None
    max_file_size: int | None = None
    source: str = ""


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` or a folder above it."""
    folder = start.resolve()
    if folder.is_file():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file():
            return path
    return None


def load_config(path: Path | None) -> LintConfig:
    """Read ``[tool.hookscope.lint]`` from ``path`` (an empty config when absent).

    Raises:
        LintError: the file is not valid TOML, or a key or value is not understood.
    """
    if path is None:
        return LintConfig()
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return LintConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LintError(f"cannot read {path}: {exc}") from exc
    section = data.get("tool", {}).get("hookscope", {}).get("lint")
    if section is None:
        return LintConfig()
    if not isinstance(section, dict):
        raise LintError(f"{path}: [tool.hookscope.lint] must be a table, got {section!r}")
    unknown = set(section) - _KEYS
    if unknown:
        raise LintError(
            f"{path}: unknown key(s) in [tool.hookscope.lint]: {', '.join(sorted(unknown))}"
        )
    jobs = section.get("jobs")
    if jobs is not None and (not isinstance(jobs, int) or jobs < 0):
        raise LintError(f"{path}: [tool.hookscope.lint] jobs must be an integer >= 0, got {jobs!r}")
    size = section.get("max-file-size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        raise LintError(
            f"{path}: [tool.hookscope.lint] max-file-size must be an integer > 0, got {size!r}"
        )
    return LintConfig(
        select=_strings(section, "select", path),
        ignore=_strings(section, "ignore", path),
        exclude=_strings(section, "exclude", path),
        jobs=jobs,
        max_file_size=size,
        source=str(path),
    )


def _strings(section: dict[str, Any], key: str, path: Path) -> tuple[str, ...] | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LintError(
            f"{path}: [tool.hookscope.lint] {key} must be a list of strings, got {value!r}"
        )
    return tuple(value)
