"""Kinds of classes, and of what functions return, imported from installed packages
(`index.installed`): asked only where the project index and the facts leave them unknown,
for a module that is neither the project's own nor torch's.
"""

from __future__ import annotations

import os

from hookscope.lint.python.index.installed import Environment, environment
from hookscope.lint.python.resolution.kinds import Kind

_KINDS = {
    "module": (Kind.MODULE, False),
    "container": (Kind.MODULE, True),
    "hookless": (Kind.HOOKLESS, False),
    "other": (Kind.OTHER, False),
}


def installed_kind(
    root: str, path: str, module: str, name: str
) -> tuple[tuple[Kind, bool], str] | None:
    """``((kind, is_container), evidence)`` of ``module``'s class ``name`` as its installed
    package's source shows it; ``None`` when it is not installed or cannot be told."""
    packages = _packages(root, path, module)
    found = None if packages is None else packages.installed_class(module, name)
    return None if found is None else (_KINDS[found.kind], found.evidence)


def installed_return(root: str, path: str, function: str) -> tuple[Kind, str] | None:
    """``(kind, evidence)`` of what the installed ``function`` (``pkg.mod.build``) returns
    by its annotation, when that is a torch module; else ``None`` (as `installed_kind`)."""
    module, _, name = function.rpartition(".")
    packages = _packages(root, path, module)
    found = None if packages is None else packages.installed_return(module, name)
    return None if found is None else (_KINDS[found.kind][0], found.evidence)


def _packages(root: str, path: str, module: str) -> Environment | None:
    """The installed packages the linted file ``path`` sees, for ``module``; ``None`` for
    torch's and the project's own. Outside a project (``root`` is ""), the file's folder is
    the project, as ``sys.path[0]`` is for a script, and nothing is kept on disk."""
    project = root or os.path.dirname(os.path.abspath(path))
    top = module.partition(".")[0]
    own = os.path.join(project, top)
    if not top or top == "torch" or os.path.isdir(own) or os.path.isfile(f"{own}.py"):
        return None
    return environment(project, keep=bool(root))
