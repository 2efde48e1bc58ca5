"""What was read of installed modules, kept on disk next to the project index.

``.hookscope_cache/lint-installed.json`` holds, per module, the top-level names read from
its file with the file's path, modification time and size; an entry is used only while
its file is unchanged, the whole file only for the same search path and format version.
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from hookscope.lint.engine.project import CACHE_DIR

_VERSION = 2  # bump whenever what `ModuleNames` records changes
_FILE = "lint-installed.json"


@dataclass(frozen=True)
class ModuleNames:
    """The top-level names of one installed module, as far as classes are concerned.

    Attributes:
        path: its file.
        classes: class name -> its bases as written.
        names: imported or assigned name -> what it stands for (dotted, in full).
        stars: the modules of its ``from m import *``.
        returns: function name -> the classes its return annotation names, as written.
    """

    path: str
    classes: dict[str, tuple[str, ...]]
    names: dict[str, str]
    stars: tuple[str, ...]
    returns: dict[str, tuple[str, ...]]


class ModuleStore:
    """The on-disk record of installed modules read for one project (see module doc)."""

    def __init__(self, root: str, paths: tuple[str, ...]) -> None:
        self.file = os.path.join(root, CACHE_DIR, _FILE)
        self.paths = paths
        self.entries: dict[str, list[Any]] = self._load()
        self.dirty = False

    def _load(self) -> dict[str, list[Any]]:
        try:
            with open(self.file, encoding="utf-8") as handle:
                data = json.load(handle)
            if data.get("version") != _VERSION or data.get("paths") != list(self.paths):
                return {}
            entries = data["modules"]
            return entries if isinstance(entries, dict) else {}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}

    def get(self, module: str) -> ModuleNames | None:
        """The names of ``module`` as last read, if its file has not changed since."""
        entry = self.entries.get(module)
        try:
            path, mtime, size, classes, names, stars, returns = entry  # type: ignore[misc]
            info = os.stat(path)
        except (OSError, TypeError, ValueError):
            return None
        if (info.st_mtime_ns, info.st_size) != (mtime, size):
            return None
        tuples = {k: tuple(v) for k, v in classes.items()}
        return ModuleNames(
            path, tuples, names, tuple(stars), {k: tuple(v) for k, v in returns.items()}
        )

    def put(self, module: str, read: ModuleNames) -> None:
        """Record what was read of ``module``."""
        try:
            info = os.stat(read.path)
        except OSError:
            return
        classes = {k: list(v) for k, v in read.classes.items()}
        stamp = [info.st_mtime_ns, info.st_size]
        returns = {k: list(v) for k, v in read.returns.items()}
        self.entries[module] = [read.path, *stamp, classes, read.names, list(read.stars), returns]
        self.dirty = True

    def save(self) -> None:
        """Write the record atomically, with what another process wrote meanwhile."""
        if not self.dirty:
            return
        self.dirty = False
        merged = {**self._load(), **self.entries}
        data = {"version": _VERSION, "paths": list(self.paths), "modules": merged}
        tmp = f"{self.file}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.file), exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(data, handle, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            with suppress(OSError):
                os.unlink(tmp)  # a read-only project: read the packages again next time
