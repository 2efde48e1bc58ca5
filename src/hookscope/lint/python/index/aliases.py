"""Module-level aliases of classes used as bases: ``MyModule = torch.jit.ScriptModule``.

For a bare base that the file neither imports nor defines as a class, each assignment of
a class-like name to it (``Name``, ``pkg.Name``, or a conditional expression of such;
not ``ABC = abc.ABC``) becomes one definition of a pseudo class with that value as base,
so ``class RWKV_RNN(MyModule)`` resolves as ``class MyModule(torch.jit.ScriptModule)``
would. Several values must agree for the kind to be known.
"""

from __future__ import annotations

import ast
import builtins
import re

from hookscope.lint.engine.index import ClassEntry


def class_aliases(data: bytes, path: str, names: set[str]) -> list[ClassEntry]:
    """``(alias, (value,), (), "path:line")`` for each assignment of a class-like name to
    one of ``names`` at the start of a line (module level or in an ``if``/``try`` there)."""
    entries: list[ClassEntry] = []
    for name in sorted(names - _BUILTINS):
        # Literal-prefixed (fast); the line start is checked by hand.
        pattern = re.escape(name.encode()) + rb"[ \t]*=(?!=)[ \t]*([^\n]*)"
        for match in re.finditer(pattern, data):
            start = match.start()
            if data[data.rfind(b"\n", 0, start) + 1 : start].strip(b" \t"):
                continue  # not at the start of a line: ``x.MyModule = ...``, ``a, MyModule = ...``
            values = _class_names(match.group(1).decode("utf-8", errors="replace"))
            if any(value.rsplit(".", 1)[-1] == name for value in values):
                continue  # ``ABC = abc.ABC``: the name already means that class
            line = data.count(b"\n", 0, start) + 1
            entries.extend((name, (value,), (), f"{path}:{line}") for value in values)
    return entries


_BUILTINS = frozenset(dir(builtins))


def _class_names(source: str) -> list[str]:
    """The class-like dotted names ``source`` (an expression) evaluates to, or ``[]``."""
    try:
        expr = ast.parse(source.split("#", 1)[0].strip(), mode="eval").body
    except SyntaxError:
        return []
    arms = [expr.body, expr.orelse] if isinstance(expr, ast.IfExp) else [expr]
    names = [_dotted(arm) for arm in arms]
    if not all(names) or not all(n.rsplit(".", 1)[-1][:1].isupper() for n in names):
        return []
    return [n for n in names if n]


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""
