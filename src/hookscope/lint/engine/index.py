"""The project-wide index: classes (bases, annotated attributes) and top-level functions.

The front ends fill it from each file's bytes in the first pass (plain tuples);
resolution looks names up in it, narrowed to the module an import names. C# classes
share it under ``cs:`` keys. A function is kept with its return annotation and, when
every ``return`` returns a call, the names called (``return Net(...)``).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

# (name, bases, annotated attributes, "path:line")
ClassEntry = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str]
# (name, return annotation or "", names every return calls or (), "path:line")
FunctionEntry = tuple[str, str, tuple[str, ...], str]
# (file relative to the root, the text of its from-import lists one a line, the modules
# they import from one a line)
ImportLists = tuple[str, bytes, bytes]


@dataclass(frozen=True)
class ClassIndex:
    """Classes of the scanned tree by name (a name may have several definitions).

    Attributes:
        bases: name → one tuple of base-class expressions per distinct definition.
        attrs: name → ``{attribute: annotation source}`` from ``self.x: T = ...``.
        where: name → ``path:line`` of its first definition, for messages.
        defs: name → ``(bases, path:line)`` of every definition, to pick the one an
            import names (``from pkg.mod import Net`` → ``pkg/mod.py``).
        functions: name → `FunctionEntry` of every top-level function so named.
        root: the project root the ``path:line`` locations are relative to (``""``:
            they are paths as given).
        lookalike_methods: the module-only methods that a plain class of the tree
            defines next to a ``forward`` (`lookalikes`): no evidence of a module there.
        import_lists: the from-import lists of every file, scripts without
            definitions too (`importlists`), sorted by file; ``None`` when not scanned.
    """

    bases: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    attrs: dict[str, dict[str, str]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    defs: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = field(default_factory=dict)
    functions: dict[str, tuple[FunctionEntry, ...]] = field(default_factory=dict)
    root: str = ""
    lookalike_methods: frozenset[str] = frozenset()
    import_lists: tuple[ImportLists, ...] | None = None

    def in_module(
        self, name: str, module: str, importer: str = ""
    ) -> tuple[tuple[tuple[str, ...], str], ...]:
        """``(bases, path:line)`` of the classes ``name`` defined in the module ``module``
        (dotted); several files of that name are narrowed to the one the file ``importer``
        imports (`nearest`)."""
        found = tuple(d for d in self.defs.get(name, ()) if defined_in(d[1], module))
        return nearest(found, [d[1] for d in found], module, importer, self.root)

    def in_package(self, name: str, package: str) -> tuple[tuple[tuple[str, ...], str], ...]:
        """``(bases, path:line)`` of the classes ``name`` defined anywhere under the package
        ``package`` (dotted), for a name its ``__init__`` re-exports."""
        return tuple(d for d in self.defs.get(name, ()) if _under(d[1], package))

    def functions_in(self, name: str, module: str, importer: str = "") -> tuple[FunctionEntry, ...]:
        """The top-level functions ``name`` of the module ``module`` (``conftest`` too),
        narrowed to the file ``importer`` imports as for `in_module`."""
        found = tuple(e for e in self.functions.get(name, ()) if defined_in(e[3], module))
        return nearest(found, [e[3] for e in found], module, importer, self.root)

    def functions_under(self, name: str, package: str) -> tuple[FunctionEntry, ...]:
        """The top-level functions ``name`` defined anywhere under the package ``package``
        (dotted), for a name its ``__init__`` re-exports (``pkg.sub.compile`` defined in
        ``pkg/sub/_compiler.py``)."""
        return tuple(e for e in self.functions.get(name, ()) if _under(e[3], package))

    def __contains__(self, name: object) -> bool:
        return name in self.bases

    def get(self, name: str) -> tuple[tuple[str, ...], ...] | None:
        """The base lists of the classes called ``name``."""
        return self.bases.get(name)


def defined_in(where: str, module: str) -> bool:
    """Whether ``path:line`` lies in the module ``module`` (``pkg.mod``, ``.mod``)."""
    tail = module.strip(".").replace(".", "/")
    path = where.rsplit(":", 1)[0].replace("\\", "/")
    return bool(tail) and path.endswith((f"{tail}.py", f"{tail}/__init__.py"))


_T = TypeVar("_T")


def _under(where: str, package: str) -> bool:
    """Whether the file of ``where`` (``path:line``) lies under ``package`` (dotted)."""
    tail = package.strip(".").replace(".", "/")
    return bool(tail) and f"/{tail}/" in "/" + where.rsplit(":", 1)[0].replace("\\", "/")


def nearest(
    found: tuple[_T, ...], wheres: list[str], module: str, importer: str, root: str
) -> tuple[_T, ...]:
    """The entries of ``found`` (``path:line`` each in ``wheres``) in the file that ``import
    module`` reaches from ``importer`` when several files are named like ``module``: the
    importer's sibling first (a script's folder is ``sys.path[0]``) unless that folder is a
    package; unchanged when no entry lies in either file."""
    if len(found) < 2 or not importer or module.startswith("."):
        return found
    here = posixpath.dirname(importer.replace("\\", "/"))
    rel = module.replace(".", "/")
    folders = [here, ""]
    if here and os.path.isfile(os.path.join(root, here, "__init__.py")):
        folders.reverse()
    for folder in folders:
        files = {posixpath.normpath(posixpath.join(folder, rel + tail)) for tail in _MODULE_FILES}
        chosen = tuple(
            entry
            for entry, where in zip(found, wheres, strict=True)
            if where.rsplit(":", 1)[0].replace("\\", "/") in files
        )
        if chosen:
            return chosen
    return found


_MODULE_FILES = (".py", "/__init__.py")


def absolute_module(module: str, path: str) -> str:
    """``..module`` imported in ``pkg/sub/file.py`` is ``pkg.module``; others unchanged."""
    level = len(module) - len(module.lstrip("."))
    if not level or not path or path.startswith(("/", "..")):
        return module
    package = path.replace("\\", "/").split("/")[:-1]
    if level - 1 > len(package):
        return module
    parts = package[: len(package) - (level - 1)] + [p for p in [module.lstrip(".")] if p]
    return ".".join(parts) or module


def merge(
    entries: Iterable[ClassEntry],
    functions: Iterable[FunctionEntry] = (),
    lookalike_methods: Iterable[str] = (),
    import_lists: Iterable[ImportLists] | None = None,
) -> ClassIndex:
    """Group entries by name; distinct base lists are kept apart."""
    builder = IndexBuilder()
    builder.add(entries, functions, lookalike_methods, import_lists)
    return builder.build()


class IndexBuilder:
    """A `ClassIndex` put together chunk by chunk, in file order (what `merge` returns),
    so that little merging is left when a parallel scan's last chunk arrives."""

    def __init__(self) -> None:
        # Tuples from the start (most names have one definition): `build` converts nothing.
        self._bases: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._attrs: dict[str, dict[str, str]] = {}
        self._where: dict[str, str] = {}
        self._defs: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {}
        self._functions: dict[str, tuple[FunctionEntry, ...]] = {}
        self._lookalikes: set[str] = set()
        self._imports: list[ImportLists] | None = []

    def add(
        self,
        entries: Iterable[ClassEntry],
        functions: Iterable[FunctionEntry] = (),
        lookalike_methods: Iterable[str] = (),
        import_lists: Iterable[ImportLists] | None = None,
    ) -> None:
        """Add the classes, functions, look-alike methods and from-import lists of the
        next files (without ``import_lists``, the index carries none)."""
        self._lookalikes.update(lookalike_methods)
        if import_lists is None or self._imports is None:
            self._imports = None
        else:
            self._imports.extend(import_lists)
        bases, attrs, where, defs = self._bases, self._attrs, self._where, self._defs
        for name, class_bases, class_attrs, location in entries:
            known = bases.get(name)
            if known is None:
                bases[name], where[name] = (class_bases,), location
                defs[name] = ((class_bases, location),)
            else:
                if class_bases not in known:
                    bases[name] = (*known, class_bases)
                defs[name] = (*defs[name], (class_bases, location))
            if class_attrs:
                attrs.setdefault(name, {}).update(class_attrs)
        by_name = self._functions
        for entry in functions:
            same = by_name.get(entry[0])
            by_name[entry[0]] = (entry,) if same is None else (*same, entry)

    def build(self) -> ClassIndex:
        """The index of everything added so far (the builder is done with then)."""
        return ClassIndex(
            self._bases,
            self._attrs,
            self._where,
            self._defs,
            self._functions,
            lookalike_methods=frozenset(self._lookalikes),
            import_lists=None if self._imports is None else tuple(sorted(self._imports)),
        )
