"""Given by callers in other project files: what they pass to a parameter of this file's
function (``def compare(eager_model, compiled_model)`` in a test utility, called by the
test files that import it), when this file never calls it and every call passes modules
(or instances of one kind). A class's constructions are `constructors`'.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.callsites.callees import add_passed
from hookscope.lint.python.resolution.callsites.constructors import constructions
from hookscope.lint.python.resolution.callsites.importers import Site, function_calls, same_file
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import Resolved, agreed


def _own_where(resolver: Context, name: str, line: int, is_class: bool) -> str:
    """``path`` (relative to the root) of this file when the index holds exactly one
    definition of ``name``, this file's at ``line``; ``""`` otherwise."""
    index = resolver.index
    if is_class:
        wheres = [where for _, where in index.defs.get(name, ())]
    else:
        wheres = [entry[3] for entry in index.functions.get(name, ())]
    # (one may share its name with others: calls are told apart by module)
    wheres = [w for w in wheres if same_file(resolver, w.rpartition(":")[0])]
    if len(wheres) != 1:
        return ""
    path, _, at = wheres[0].rpartition(":")
    same = same_file(resolver, path)
    return path if same and (is_class or at == str(line)) else ""


def given_in_other_files(
    resolver: Context, func: Function, scope: Scope, name: str, depth: int
) -> Resolved | None:
    """The parameter ``name`` of ``func`` (a module-level function, or the ``__init__`` of
    a module-level class) from what the calls in the files importing it pass."""
    is_class = func.name == "__init__"
    owner = scope.cls if is_class else func
    if owner is None or owner not in resolver.file.tree.body:
        return None
    where = _own_where(resolver, owner.name, func.lineno, is_class)
    if not where:
        return None
    if isinstance(owner, ast.ClassDef):
        sites: Iterable[Site | None] = constructions(resolver, owner, func, where)
    else:
        sites = function_calls(resolver, owner.name, where) or [None]
    results: list[tuple[ast.Call, str, Resolved]] = []
    skip = 1 if is_class else 0
    for site in sites:  # (in order: an unknown one ends the look-up before the rest is read)
        if site is None:
            return None  # a call that cannot be seen
        other, call, caller = site
        if not add_passed(results, other, func, skip, (call, caller), name, depth, varargs=True):
            return None
    return agreed(results, "every call", name)
