"""What a class is (a module, a hookless module, or not), from its bases followed through
the same file, the project index, the facts of `known` and `libraries`, and installed
packages (`third_party`)."""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable

from hookscope.lint.engine.index import ClassIndex, absolute_module
from hookscope.lint.python.facts import known, libraries
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import PyFile
from hookscope.lint.python.resolution.bodies import module_evidence
from hookscope.lint.python.resolution.crossfile import class_def_of
from hookscope.lint.python.resolution.kinds import Kind
from hookscope.lint.python.resolution.third_party import installed_kind

_DOTTED_CLASS = re.compile(r"(?:[A-Za-z_]\w*\.)+[A-Z]\w*")


def base_names(cls: ast.ClassDef) -> tuple[str, ...]:
    """The dotted names of a class's bases, generic parameters dropped (``Model[T]`` → ``Model``)."""
    names = (dotted(b.value if isinstance(b, ast.Subscript) else b) for b in cls.bases)
    return tuple(name for name in names if name)


class ClassKinds:
    """Kinds of the classes one file can name (`Resolver` builds on it)."""

    def __init__(self, pyfile: PyFile, index: ClassIndex) -> None:
        self.file = pyfile
        self.index = index
        self._class_kinds: dict[str, tuple[Kind, bool]] = {}
        self._computing: set[str] = set()  # look-ups under way, to cut cycles
        self._cycle = False  # the look-up under way met one of them
        self._within: dict[str, tuple[Kind, bool]] = {}  # answers that met one, for now
        self._from_imports: dict[str, str] | None = None
        # class name -> what in its body shows it is a module, when its bases could not
        self.by_body: dict[str, str] = {}
        self.missed = False  # a class the masked parse dropped was needed (`Resolver`)
        # ``module.Name`` -> how an installed package's source shows what the class is
        self.installed: dict[str, str] = {}

    @property
    def where(self) -> str:
        """This file's path as the index's locations are written (from the project root)."""
        root = self.index.root
        return os.path.relpath(self.file.path, root) if root else self.file.path

    def imported(self, bases: tuple[str, ...]) -> tuple[str, ...]:
        """Bare base names with the module they are imported from, as the index keeps them
        (``from gpytorch.models import ExactGP`` → ``gpytorch.models.ExactGP``)."""
        if self._from_imports is None:
            where = self.where
            self._from_imports = {
                alias.asname or alias.name: absolute_module(
                    f"{'.' * node.level}{node.module or ''}", where
                ).rstrip(".")
                + f".{alias.name}"
                for node in self.file.tree.body
                if isinstance(node, ast.ImportFrom)
                for alias in node.names
            }
            for name, path in _imported_by_call(self.file.tree):
                self._from_imports.setdefault(name, path)
        return tuple(self._library_base(base) for base in bases)

    def _library_base(self, base: str) -> str:
        """``base`` with its imported name spelled out; a dotted one only when that names a
        library module class."""
        assert self._from_imports is not None
        first, dot, rest = base.partition(".")
        if not dot:
            return self._from_imports.get(base, base)
        origin = self._from_imports.get(first) or next(
            (
                alias.name
                for node in self.file.tree.body
                if isinstance(node, ast.Import)
                for alias in node.names
                if alias.asname == first
            ),
            "",
        )
        module, _, last = f"{origin}.{rest}".rpartition(".")
        known_library = libraries.not_module_package(module) or (
            origin and self._installed(module, last) is not None  # flax's ``nn.Module`` too
        )
        return f"{module}.{last}" if origin and known_library else base

    def class_kind(self, name: str, module: str = "") -> tuple[Kind, bool]:
        """``(kind, is_container)`` of instances of the class named ``name`` (dotted ok).

        ``module`` (``pkg.mod`` of ``from pkg.mod import Net``, or a dotted name's prefix)
        picks the definition in that module when the project defines several.
        """
        prefix, _, last = name.rpartition(".")
        module = module or prefix
        if module.partition(".")[0] in libraries.HOOKLESS_LIBRARIES:
            return Kind.HOOKLESS, False
        if libraries.not_module_package(module):
            return Kind.OTHER, False  # not the project's class of the same name
        if libraries.auto_model_class(f"{module}.{last}", library=True):
            return Kind.MODULE, False  # its loaders give models (``self.AUTO_CLASS = AutoModel``)
        key = f"{module}:{last}"
        if key in self._class_kinds:
            return self._class_kinds[key]
        if key in self._computing or key in self._within:
            self._cycle = True  # a class being resolved (unknown on this path), or one that met one
            return self._within.get(key, (Kind.UNKNOWN, False))
        self._computing.add(key)
        outer, self._cycle = self._cycle, False
        try:
            result = None
            variants = (
                self.index.in_module(last, module, self.where)
                if module and last not in known.FIXED
                else ()
            )
            if not variants and module and self._ambiguous(last):
                variants = self.index.in_package(last, module)  # re-exported by a package
            if variants and prefix and last in self.file.classes:
                # ``class Base(gan.Base)``: the written module's class, not this file's own
                variants = tuple(v for v in variants if v[1].rsplit(":", 1)[0] != self.where)
            if variants and (prefix or last not in self.file.classes):
                kinds = {
                    self._bases_kind(
                        self._same_file_bases(self._foreign_library_bases(bases, w), w)
                    )
                    for bases, w in variants
                }
                result = kinds.pop() if len(kinds) == 1 else None
            if result is not None and result[0] is Kind.UNKNOWN:
                result = self._by_body(last, variants) or result
            if result is None and not variants and self._compiled(module):
                result = (Kind.UNKNOWN, False)  # not the project's same-named Python class
            if result is None:  # (``nn.Module``: torch's, whatever the file calls ``Module``)
                result = self._class_kind(last, qualified=bool(module))
            if result[0] is Kind.UNKNOWN and module and not variants:
                result = self._installed(module, last) or result
        finally:
            self._computing.discard(key)
        # A result that met a cycle depends on where the look-up started: kept for good only for
        # the class that started it (answers alike in any order), for the others until it ends.
        (self._within if self._cycle and self._computing else self._class_kinds)[key] = result
        if not self._computing:
            self._within.clear()
        self._cycle = outer or (self._cycle and bool(self._computing))
        return result

    def _installed(self, module: str, name: str) -> tuple[Kind, bool] | None:
        """``module``'s class ``name`` read from an installed package (`third_party`)."""
        found = installed_kind(self.index.root, self.file.path, module, name)
        if found is None:
            return None
        kind, self.installed[f"{module}.{name}"] = found
        return kind

    def _ambiguous(self, last: str) -> bool:
        """Whether the project defines several classes ``last`` that torch does not name."""
        known_name = last in known.TORCH_NN_MODULES or last in known.EXTERNAL_MODULES
        return not known_name and last not in known.FIXED and len(self.index.get(last) or ()) > 1

    def _foreign_library_bases(self, bases: tuple[str, ...], where: str) -> tuple[str, ...]:
        """The dotted bases of the class defined at ``where`` spelled through that file's own
        imports (``made.MADE`` after ``import nflows.nn.nde.made as made``)."""
        if not any("." in base for base in bases):
            return bases
        path = os.path.join(self.index.root, where.rsplit(":", 1)[0])  # (absolute: no root)
        try:
            info = os.stat(path)
            heads = _import_heads(path, info.st_mtime_ns, info.st_size)
        except OSError:
            return bases
        return tuple(_through_imports(heads, base, self._installed) for base in bases)

    def _compiled(self, module: str) -> bool:
        """Whether ``module`` is a compiled extension of this project (``pkg._C``): its
        package is a folder under the project root, but no Python file or folder is it."""
        root = self.index.root
        parts = module.split(".")
        if not root or not module or module.startswith(".") or len(parts) < 2:
            return False
        if not os.path.isdir(os.path.join(root, *parts[:-1])):
            return False  # not a package of this project (or a class nested in a module)
        path = os.path.join(root, *parts)
        return not (os.path.exists(f"{path}.py") or os.path.isdir(path))

    def _class_kind(self, last: str, qualified: bool = False) -> tuple[Kind, bool]:
        if last in known.HOOKLESS_MODULES:
            return Kind.HOOKLESS, False
        if last in known.CONTAINERS:
            return Kind.MODULE, True
        local = self.file.classes.get(last)
        if local is not None and any(
            (dotted(d) or "").endswith("jit.interface") for d in local.decorator_list
        ):
            return Kind.HOOKLESS, False
        local_bases = self.imported(base_names(local)) if local else None
        torch_name = last in known.TORCH_NN_MODULES or last in known.EXTERNAL_MODULES
        if local is not None and libraries.keras_file(self.file.tree, self.file.imports_torch):
            torch_name = False  # flax's or Keras's own ``Module``/``Linear``, not torch's
        if torch_name and local is None and self._dropped(last):
            return Kind.UNKNOWN, False
        # A same-file class of that name wins only if it is plainly not a module (one with
        # no bases is, for its bare name: ``class Container:`` is not ``nn.Container``).
        if torch_name and (
            local_bases is None
            or (qualified and not local_bases)
            or self._bases_kind(local_bases)[0] is not Kind.OTHER
        ):
            return Kind.MODULE, False
        if last in known.NON_MODULE_BASES:
            return Kind.OTHER, False
        if local_bases is not None:
            result = self._bases_kind(local_bases)
            if result[0] is Kind.UNKNOWN and local is not None:
                evidence = module_evidence(local, self.file.path, self.file.tree)
                if evidence:
                    self.by_body[last] = evidence
                    return Kind.MODULE, False
            return result
        located = self.index.defs.get(last)
        if not located:
            return Kind.UNKNOWN, False
        kinds = {
            self._bases_kind(self._same_file_bases(self._foreign_library_bases(bases, w), w))
            for bases, w in located
        }
        result = kinds.pop() if len(kinds) == 1 else (Kind.UNKNOWN, False)
        if result[0] is Kind.UNKNOWN:
            return self._by_body(last, located) or result
        return result

    def _dropped(self, name: str) -> bool:
        """Whether the masked parse left out a class ``name`` of this file (sets ``missed``)."""
        if getattr(self, "complete", True):
            return False
        if not re.search(rf"^[ \t]*class[ \t]+{re.escape(name)}\b", self.file.text, re.M):
            return False
        self.missed = True
        return True

    def _by_body(
        self, name: str, located: tuple[tuple[tuple[str, ...], str], ...]
    ) -> tuple[Kind, bool] | None:
        """A module, for the class ``name`` of one other project file whose body shows it."""
        files = {where.rpartition(":")[0] for _, where in located}
        if len(files) != 1:
            return None
        other = class_def_of(self, name, files.pop())  # type: ignore[arg-type]  # a Resolver
        if other is None:
            return None
        evidence = module_evidence(*other)
        if not evidence:
            return None
        self.by_body[name] = evidence
        return Kind.MODULE, False

    def _same_file_bases(self, bases: tuple[str, ...], where: str) -> tuple[str, ...]:
        """Bare bases that the class's own file defines, spelled with that file's module
        (``QcQuantizeWrapper`` → ``pkg.qc_quantize_op.QcQuantizeWrapper``) when the project
        defines that name elsewhere too: Python looks a bare name up in its own module."""
        path = where.rsplit(":", 1)[0]
        if not path.endswith(".py"):
            return bases
        out = []
        for base in bases:
            defs = self.index.defs.get(base, ()) if "." not in base else ()
            if len(defs) > 1 and any(w.rsplit(":", 1)[0] == path for _, w in defs):
                base = f"{path[:-3].replace(os.sep, '/').replace('/', '.')}.{base}"
            out.append(base)
        return tuple(out)

    def _bases_kind(self, bases: tuple[str, ...]) -> tuple[Kind, bool]:
        if not bases:
            return Kind.OTHER, False
        results = [self.class_kind(base) for base in bases]
        # A hookless base wins over a plain module base: it subclasses nn.Module itself,
        # so its ``__call__`` comes first in the MRO.
        for kind in (Kind.HOOKLESS, Kind.MODULE, Kind.UNKNOWN):
            hits = [container for k, container in results if k is kind]
            if hits:
                return kind, any(hits)
        return Kind.OTHER, False

    def class_origin(self, name: str) -> str:
        """Where the class ``name`` comes from: ``class Net(nn.Module) at f.py:3``; for a
        class told a module by its body, what in it says so (`bodies`)."""
        body = f", a module by its body: {self.by_body[name]}" if name in self.by_body else ""
        local = self.file.classes.get(name)
        if local is not None:
            bases = ", ".join(base_names(local))
            return f"class {name}({bases}) at {self.file.path}:{local.lineno}{body}"
        variants = self.index.get(name)
        if variants:
            where = self.index.where.get(name, "")
            shown = f"class {name}({', '.join(variants[0])})" + (f" at {where}" if where else "")
            return shown + body
        return f"torch.nn.{name}" if name in known.TORCH_NN_MODULES else ""

    def class_looks_like_module(self, cls: ast.ClassDef) -> bool:
        """For a class with unresolved bases: does a base's name read like a module?"""
        names = base_names(cls)
        return self.file.imports_torch and any(known.MODULE_NAME.search(n) for n in names)


def _imported_by_call(tree: ast.Module) -> list[tuple[str, str]]:
    """``(name, "pkg.mod.Cls")`` for module-level imports made by a helper given the dotted
    path as text: ``X = _safe_import("cpflows.flows.X")`` (skbase), ``lazy_import("pkg.X")``."""
    out = []
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and len(node.value.args) == 1
            and isinstance(node.value.args[0], ast.Constant)
            and isinstance(node.value.args[0].value, str)
        ):
            continue
        helper = (dotted(node.value.func) or "").rsplit(".", 1)[-1].lower()
        path = node.value.args[0].value
        if "import" in helper and _DOTTED_CLASS.fullmatch(path):
            out.append((node.targets[0].id, path))
    return out


def _through_imports(
    heads: dict[str, str], base: str, installed: Callable[[str, str], tuple[Kind, bool] | None]
) -> str:
    """``head.Name`` with ``head`` replaced by what an import binds it to (`_import_heads`),
    when that names a class of an installed package (``installed(module, name)``)."""
    head, dot, rest = base.partition(".")
    if not dot or head not in heads:
        return base
    module, _, name = f"{heads[head]}.{rest}".rpartition(".")
    return f"{module}.{name}" if installed(module, name) is not None else base


@functools.lru_cache(maxsize=1024)
def _import_heads(path: str, mtime: int, size: int) -> dict[str, str]:
    """The first import of each name in ``path`` (read once a version: namesakes share files):
    ``import a.b as head``, ``from a import b as head`` or ``from a import head``."""
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", errors="replace").splitlines()
    heads: dict[str, str] = {}
    for words in map(str.split, lines):
        if words[:1] == ["import"] and words[2:3] == ["as"] and len(words) == 4:
            heads.setdefault(words[3], words[1])
        elif (
            words[:1] == ["from"]
            and words[2:3] == ["import"]
            and (len(words) == 4 or len(words) == 6 and words[4] == "as")
        ):
            heads.setdefault(words[-1], f"{words[1]}.{words[3]}")
    return heads


# A base of more project classes than this (a family's root) is not looked below.
MAX_SUBCLASSES = 20
# class name -> the names of the project classes naming it as a base, for the index stamped
_CHILDREN: dict[str, list[str]] = {}
_CHILDREN_INDEX: list[tuple[int, int]] = [(0, 0)]


def subclasses_by_base(index: ClassIndex) -> dict[str, list[str]]:
    """``{base name: the project classes naming it as a base}``, built once per index."""
    stamp = (id(index), len(index.bases))
    if _CHILDREN_INDEX[0] != stamp:
        _CHILDREN_INDEX[0] = stamp
        _CHILDREN.clear()
        for name, variants in index.bases.items():
            for base in {b.rsplit(".", 1)[-1] for group in variants for b in group}:
                _CHILDREN.setdefault(base, []).append(name)
    return _CHILDREN


def descendants(index: ClassIndex, name: str, limit: int = MAX_SUBCLASSES) -> list[str] | None:
    """The project classes deriving from ``name`` at any depth (by name, nearest first
    along each line); ``None`` when there are more than ``limit`` (no file is read)."""
    children = subclasses_by_base(index)
    todo, seen = list(children.get(name, ())), {name}
    out: list[str] = []
    while todo:
        child = todo.pop(0)
        if child in seen:
            continue
        seen.add(child)
        out.append(child)
        if len(out) > limit:
            return None
        todo.extend(children.get(child, ()))
    return out
