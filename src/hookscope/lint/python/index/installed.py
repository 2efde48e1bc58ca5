"""Classes of installed packages, read from their sources in the running environment.

A class imported from a package outside the project is decided by that package's source
(or ``.pyi`` stub): its bases are followed through the package's modules (and those they
import from) to ``torch`` (the hand-written torch facts), ``object``, or something
unreadable. Nothing is imported or run; only the modules a look-up needs are read, once
per process. The search path is ``sys.path`` without the project's entries and the
current folder.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from hookscope.lint.python.facts import known
from hookscope.lint.python.index.installed_cache import ModuleNames, ModuleStore
from hookscope.lint.python.parse.bindings import dotted

MAX_DEPTH = 8  # bases followed through at most this many classes
MAX_FILE_BYTES = 2_000_000  # a larger module is not read
EVIDENCE_PREFIX = "installed package "
_INSTALLED = frozenset({"site-packages", "dist-packages"})

# torch's own classes are decided by the hand-written torch facts (``TorchKind``):
# "module", "hookless", "container", "other" or "" (not known).
TorchKind = Callable[[str], str]
_BUILTIN_CLASSES = frozenset(n for n, v in vars(builtins).items() if isinstance(v, type))


def torch_kind(target: str) -> str:
    """What the torch class spelled ``target`` (``torch.nn.Module``) is, by the hand-written
    torch facts of `known` (torch itself is never read from the environment)."""
    last = target.rpartition(".")[2]
    if last in known.HOOKLESS_MODULES:
        return "hookless"
    if last in known.CONTAINERS:
        return "container"
    if last in known.TORCH_NN_MODULES or last in known.EXTERNAL_MODULES:
        return "module"
    return "other" if last in known.NON_MODULE_BASES else ""


_PATHS: dict[tuple[str, ...], tuple[str, ...]] = {}  # (root, *sys.path) -> search path
_ENVIRONMENTS: dict[tuple[str, ...], Environment] = {}  # (root, *search path) -> reader


def environment(root: str, keep: bool = True) -> Environment:
    """The environment of the running interpreter, seen from the project ``root``
    (one per root and process: what it has read is kept; with ``keep``, also on disk
    in the project's cache folder, see `installed_cache`)."""
    paths = _PATHS.get((root, *sys.path))
    if paths is None:
        paths = _PATHS[(root, *sys.path)] = search_path(root)
    found = _ENVIRONMENTS.get((root, *paths))
    if found is None:
        store = ModuleStore(root, paths) if keep and os.path.isdir(root) else None
        found = _ENVIRONMENTS[(root, *paths)] = Environment(paths, torch_kind, store)
    return found


@dataclass(frozen=True)
class InstalledClass:
    """What an installed package's class is.

    Attributes:
        kind: ``"module"`` (an ``nn.Module`` subclass), ``"hookless"`` (a module whose
            ``__call__`` runs no hooks), ``"container"`` (a module container) or ``"other"``.
        evidence: ``installed package X: class Y(nn.Module)``, the class and its bases as
            written in the package, then the base chain that reached torch.
    """

    kind: str
    evidence: str


def search_path(root: str, paths: Sequence[str] | None = None) -> tuple[str, ...]:
    """The folders installed packages are looked for in: ``paths`` (default ``sys.path``)
    without the current folder and without folders inside the project ``root`` (but for
    a ``site-packages`` there: a virtual environment kept in the project folder)."""
    root = os.path.realpath(root) if root else ""
    out = []
    for entry in sys.path if paths is None else paths:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        installed = bool(_INSTALLED.intersection(real.split(os.sep)))  # a venv in the project
        if real == os.path.realpath(os.getcwd()) or (
            root and not installed and (real == root or real.startswith(root + os.sep))
        ):
            continue
        out.append(real)
    return tuple(dict.fromkeys(out))


class Environment:
    """Reads classes of the packages installed on a search path (see `search_path`)."""

    def __init__(
        self, paths: Sequence[str], torch_kind: TorchKind, store: ModuleStore | None = None
    ) -> None:
        self.paths = tuple(paths)
        self.torch_kind = torch_kind
        self.store = store  # what earlier runs read (`installed_cache`), if kept
        self._modules: dict[str, ModuleNames | None] = {}
        self._classes: dict[tuple[str, str], InstalledClass | None] = {}

    def find(self, module: str) -> str:
        """The source file of ``module`` on the search path ("" if none): the first
        folder holding its top-level package decides, as for the interpreter."""
        parts = module.split(".")
        for entry in self.paths:
            for top in (parts[0], f"{parts[0]}-stubs"):
                if not (
                    os.path.isdir(os.path.join(entry, top))
                    or os.path.isfile(os.path.join(entry, f"{top}.py"))
                    or os.path.isfile(os.path.join(entry, f"{top}.pyi"))
                ):
                    continue
                base = os.path.join(entry, top, *parts[1:])
                for candidate in (
                    f"{base}.py",
                    os.path.join(base, "__init__.py"),
                    f"{base}.pyi",
                    os.path.join(base, "__init__.pyi"),
                ):
                    if os.path.isfile(candidate):
                        return candidate
                if top == parts[0]:
                    return ""  # the package is here, that module is not (compiled, or none)
        return ""

    def installed_class(self, module: str, name: str) -> InstalledClass | None:
        """What the class ``name`` of the installed module ``module`` is; ``None`` when
        the module is not installed, does not define it, or its bases cannot be told."""
        found = self._class(module, name, 0)
        if self.store is not None:
            self.store.save()  # (only when something new was read)
        return found

    def installed_return(self, module: str, name: str, depth: int = 0) -> InstalledClass | None:
        """What the installed function ``module.name`` returns by its return annotation
        (``def resnet50(...) -> ResNet``; every class of a union must agree); ``None``
        when it is not installed, not annotated, or the classes cannot be told."""
        read = self._module(module)
        if read is None or depth > MAX_DEPTH:
            return None
        parts = read.returns.get(name)
        if parts is None:  # re-exported (``from .resnet import *``)
            target = read.names.get(name) or next(
                (f"{star}.{name}" for star in read.stars if self._defines(star, name)), ""
            )
            owner, _, last = target.rpartition(".")
            return self.installed_return(owner, last, depth + 1) if owner else None
        kinds = [self._base(read, module, part, depth) for part in parts]
        if len({kind for kind, _ in kinds}) != 1:
            return None
        kind, chain = kinds[0][0], next((chain for _, chain in kinds if chain), "")
        if kind not in ("module", "container", "hookless"):
            return None
        shown = f"def {name}(...) -> {' | '.join(parts)}"
        package = module.partition(".")[0]
        return InstalledClass(
            kind, f"{EVIDENCE_PREFIX}{package}: {shown}" + (f" <- {chain}" if chain else "")
        )

    def _class(self, module: str, name: str, depth: int) -> InstalledClass | None:
        key = (module, name)
        if key in self._classes:
            return self._classes[key]
        self._classes[key] = None  # a cycle of bases tells nothing
        result = self._lookup(module, name, depth) if depth <= MAX_DEPTH else None
        self._classes[key] = result
        return result

    def _lookup(self, module: str, name: str, depth: int) -> InstalledClass | None:
        read = self._module(module)
        if read is None:
            return None
        bases = read.classes.get(name)
        if bases is None:  # re-exported (``from .models import Net``), or an alias
            target = read.names.get(name) or next(
                (f"{star}.{name}" for star in read.stars if self._defines(star, name)), ""
            )
            kind, chain = self._named(target, depth + 1) if target else ("", "")
            if not kind:
                return None
            return InstalledClass(kind, f"{EVIDENCE_PREFIX}{module.partition('.')[0]}: {chain}")
        kinds = []
        for base in bases:
            kind, chain = self._base(read, module, base, depth)
            if not kind:
                return None  # one base that cannot be told: the class cannot be either
            kinds.append((kind, chain))
        kind, chain = _strongest(kinds) if kinds else ("other", "")
        package = module.partition(".")[0]
        shown = f"class {name}({', '.join(bases)})"
        evidence = f"{EVIDENCE_PREFIX}{package}: {shown}" + (f" <- {chain}" if chain else "")
        return InstalledClass(kind, evidence)

    def _defines(self, module: str, name: str, depth: int = 0) -> bool:
        """Whether ``module`` defines or imports ``name``, also through its own star imports
        (transformers' ``from .models import *`` -> ``from .bert import *`` -> ...); a file
        whose text never names it (and has no star import) is not parsed."""
        if depth > MAX_DEPTH or not _mentions(self.find(module), name):
            return False
        read = self._module(module)
        if read is None:
            return False
        if name in read.classes or name in read.names or name in read.returns:
            return True
        return any(self._defines(star, name, depth + 1) for star in read.stars)

    def _base(self, read: ModuleNames, module: str, base: str, depth: int) -> tuple[str, str]:
        """The kind of one base as written in ``module`` and the chain behind it."""
        first, dot, rest = base.partition(".")
        if first in read.classes and not dot:
            target = f"{module}.{base}"
        elif first in read.names:
            target = read.names[first] + (f".{rest}" if dot else "")
        elif not dot and base in _BUILTIN_CLASSES:
            return "other", ""  # ``object``, ``dict``, ``Exception``: never a module
        else:
            return "", ""
        return self._named(target, depth + 1)

    def _named(self, target: str, depth: int) -> tuple[str, str]:
        """The kind of the class spelled ``target`` in full (``torch.nn.Module``)."""
        if target == "torch" or target.startswith("torch."):
            kind = self.torch_kind(target)
            return (kind, "") if kind else ("", "")
        owner, _, last = target.rpartition(".")
        found = self._class(owner, last, depth) if owner else None
        if found is None:
            return "", ""
        return found.kind, found.evidence.partition(": ")[2]

    def _module(self, module: str) -> ModuleNames | None:
        if module not in self._modules:
            kept = self.store.get(module) if self.store is not None else None
            read = kept or _read(self.find(module), module)
            if read is not None and kept is None and self.store is not None:
                self.store.put(module, read)
            self._modules[module] = read
        return self._modules[module]


def _strongest(kinds: list[tuple[str, str]]) -> tuple[str, str]:
    """A hookless base wins over a module base (it comes first in the MRO), a module
    base over plain classes."""
    for wanted in ("hookless", "module", "container"):
        for kind, chain in kinds:
            if kind == wanted:
                return kind, chain
    return "other", ""


def _mentions(path: str, name: str) -> bool:
    """Whether the file ``path`` names ``name`` or star-imports (cheap: no parse)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_FILE_BYTES)
    except OSError:
        return False
    return name.encode() in text or b"import *" in text


def _read(path: str, module: str) -> ModuleNames | None:
    """The classes and names at the top of the module file ``path`` (also under ``if``
    and ``try``: ``if TYPE_CHECKING:`` re-exports, ``try: import x`` fallbacks)."""
    if not path:
        return None
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None
    package = (
        module if os.path.basename(path).startswith("__init__.") else module.rpartition(".")[0]
    )
    classes: dict[str, tuple[str, ...]] = {}
    names: dict[str, str] = {}
    stars: list[str] = []
    returns: dict[str, tuple[str, ...]] = {}
    for node in _top_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            returns.setdefault(node.name, _annotated(node.returns))
        elif isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, tuple(n for n in map(_dotted, node.bases) if n))
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module or "", node.level, package)
            for alias in node.names:
                if alias.name == "*":
                    stars.append(source)
                else:
                    names.setdefault(alias.asname or alias.name, f"{source}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names.setdefault(alias.asname, alias.name)
                else:
                    top = alias.name.partition(".")[0]
                    names.setdefault(top, top)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], _dotted(node.value)
            if isinstance(target, ast.Name) and value and target.id not in names:
                names[target.id] = _spelled(value, names, classes, module)
    return ModuleNames(path, classes, names, tuple(stars), returns)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.If, ast.Try)):  # a ``try``'s ``else:`` too, not its fallbacks
            out.extend(_top_level(node.body))
            out.extend(_top_level(node.orelse))
        else:
            out.append(node)
    return out


def _spelled(
    value: str, names: dict[str, str], classes: dict[str, tuple[str, ...]], module: str
) -> str:
    """An assigned dotted value in full (``Base = nn.Module`` -> ``torch.nn.Module``)."""
    first, dot, rest = value.partition(".")
    if first in names:
        return names[first] + (f".{rest}" if dot else "")
    if first in classes and not dot:
        return f"{module}.{first}"
    return value


def _annotated(node: ast.expr) -> tuple[str, ...]:
    """The classes a return annotation names: ``A | B``, ``Optional[A]``, ``"A"``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return (*_annotated(node.left), *_annotated(node.right))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        with suppress(SyntaxError):
            return _annotated(ast.parse(node.value, mode="eval").body)
        return ("",)
    if isinstance(node, ast.Subscript) and _dotted(node.value).endswith(("Optional", "Union")):
        inner = node.slice
        return tuple(p for e in getattr(inner, "elts", [inner]) for p in _annotated(e))
    return (_dotted(node),)


def _absolute(module: str, level: int, package: str) -> str:
    if not level:
        return module
    parts = package.split(".") if package else []
    parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*parts, module] if module else parts)


def _dotted(node: ast.expr) -> str:
    return dotted(node.value if isinstance(node, ast.Subscript) else node) or ""
