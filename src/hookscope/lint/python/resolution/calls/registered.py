"""Functions that torch calls with a module: hooks registered on modules.

``m.register_full_backward_hook(fn)`` makes torch call ``fn(module, grad_input,
grad_output)``: its first parameter (after ``self``) is a module, hookless in a *forward*
hook (there ``module.forward(...)`` is the only way to skip the hook). Only a function the
file never calls itself, whose every other use is such a registration, counts.
"""

from __future__ import annotations

import ast
import weakref

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context, Function
from hookscope.lint.python.resolution.kinds import Kind, Resolved

_BACKWARD = frozenset(
    {"register_full_backward_hook", "register_full_backward_pre_hook", "register_backward_hook"}
    # global hooks (``torch.nn.modules.module``): torch calls them with every module
    | {"register_module_full_backward_hook", "register_module_full_backward_pre_hook"}
    | {"register_module_backward_hook"}
)
_FORWARD = frozenset(
    {"register_forward_hook", "register_forward_pre_hook"}
    | {"register_module_forward_hook", "register_module_forward_pre_hook"}
)

# tree -> name -> (registrar, line) of each use of the name (``None``: another use)
_USES: weakref.WeakKeyDictionary[ast.AST, dict[str, list[tuple[str, int] | None]]]
_USES = weakref.WeakKeyDictionary()


def hooked_module(resolver: Context, func: Function, scope: Scope, name: str) -> Resolved | None:
    """The first parameter ``name`` of ``func`` (after ``self``) when ``func`` is only
    registered as a hook: a module for a backward hook, hookless for a forward hook."""
    params = [*func.args.posonlyargs, *func.args.args][1 if scope.self_name else 0 :]
    if not params or params[0].arg != name:
        return None
    found = _uses(resolver.file.tree).get(func.name, [])
    uses = [use for use in found if use is not None]
    if not uses or len(uses) != len(found):
        return None
    cls = scope.cls
    if scope.self_name and cls is not None:  # ``self.hook``: registered in its own class
        last = cls.end_lineno or cls.lineno
        if any(not cls.lineno <= line <= last for _, line in uses):
            return None
    registrars = {registrar for registrar, _ in uses}
    if len(registrars & _FORWARD) == len(registrars):
        kind, what = Kind.HOOKLESS, "a forward hook: calling it there runs the hook again"
    elif not registrars & _FORWARD:
        kind, what = Kind.MODULE, "a backward hook: torch passes it the hooked module"
    else:
        return None
    registrar, line = uses[0]
    where = f"{resolver.file.path}:{line}"
    return Resolved(kind, name=name, via=f"{func.name} is {what} ({registrar} at {where})")


def _uses(tree: ast.AST) -> dict[str, list[tuple[str, int] | None]]:
    """Every load of a name or ``self.name``-style attribute in ``tree``: as the first
    argument of a hook registration, or (``None``) anything else."""
    found = _USES.get(tree)
    if found is not None:
        return found
    found = _USES[tree] = {}
    registered: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        registrar = _registrar(node)
        arg = _hook_argument(node) if registrar else None
        if arg is not None:
            registered.add(id(arg))
            key = arg.id if isinstance(arg, ast.Name) else arg.attr
            found.setdefault(key, []).append((registrar, node.lineno))
    for node in ast.walk(tree):
        if id(node) in registered:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.setdefault(node.id, []).append(None)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            found.setdefault(node.attr, []).append(None)
    return found


def _registrar(node: ast.Call) -> str:
    """The hook registration ``node`` calls (``m.register_forward_hook(...)``, or a bare
    ``register_module_forward_hook(...)`` imported from torch), else ``""``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name if name in _BACKWARD or name in _FORWARD else ""


def _hook_argument(call: ast.Call) -> ast.Name | ast.Attribute | None:
    """The function a registration hands torch: its one argument (or ``hook=``), itself or
    wrapped in ``partial(fn, key=value)`` (keywords only: the module stays first)."""
    hooks = [*call.args, *(k.value for k in call.keywords if k.arg == "hook")]
    if len(hooks) != 1:
        return None
    hook = hooks[0]
    if (
        isinstance(hook, ast.Call)
        and (dotted(hook.func) or "") in ("partial", "functools.partial")
        and len(hook.args) == 1
    ):
        hook = hook.args[0]
    return hook if isinstance(hook, (ast.Name, ast.Attribute)) else None
