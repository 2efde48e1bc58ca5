"""Calls that show what they are given is a torch module, beyond its own methods.

- ``x.apply(fn)`` with ``fn`` a function (a ``def``, a lambda, a ``partial``):
  ``Module.apply`` runs ``fn`` on every submodule (an autograd ``Function.apply`` takes
  tensors, a pandas ``apply`` has no ``forward`` next to it);
- a library function that takes a module first, by the name it was imported under
  (``torchsummary.summary(x, ...)``, ``torch.onnx.export(x, ...)``, ``wandb.watch(x)``);
- on a name bound only to ``torch.load(...)``, the methods modules share with tensors
  (``x.to(device)``, ``x.train()``): of what ``torch.load`` gives, only a pickled module
  has a ``forward`` and moves to a device.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import import_origin

# Methods a module shares with tensors and trainers: evidence on `torch_loaded` names only.
LOADED_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "train", "state_dict", "half", "float"})


def module_method(resolver: Context, node: ast.Call, scope: Scope, loaded: bool = False) -> bool:
    """``x.m(...)`` with ``m`` a method only modules have and no plain class of the project
    defines next to a ``forward`` (`lookalikes`); ``x.apply(fn)`` with ``fn`` a function;
    with ``loaded`` (``x`` is `torch_loaded`), `LOADED_MODULE_METHODS` too."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr in resolver.index.lookalike_methods:
        return False
    if func.attr in known.MODULE_ONLY_METHODS or (loaded and func.attr in LOADED_MODULE_METHODS):
        return True
    return func.attr == "apply" and _applies_function(resolver, node, scope)


def torch_loaded(resolver: Context, receiver: ast.expr, scope: Scope) -> str:
    """``name = torch.load(...) at f.py:3`` when every binding of the name ``receiver`` in
    ``scope``'s function is a ``torch.load(...)`` call; ``""``."""
    if not isinstance(receiver, ast.Name):
        return ""
    bindings = resolver.bindings_of(scope.node).get(receiver.id, [])
    for binding in bindings:
        call = binding.expr
        if not (
            binding.kind == "value"
            and isinstance(call, ast.Call)
            and import_origin(resolver, dotted(call.func) or "", scope) == "torch.load"
        ):
            return ""
    if not bindings:
        return ""
    line = getattr(bindings[0].expr, "lineno", 0)
    return f"{receiver.id} = torch.load(...) at {resolver.file.path}:{line}"


def _applies_function(resolver: Context, node: ast.Call, scope: Scope) -> bool:
    if len(node.args) != 1 or node.keywords:
        return False
    (arg,) = node.args
    if isinstance(arg, ast.Lambda):
        return True
    if isinstance(arg, ast.Call):
        return (dotted(arg.func) or "").rpartition(".")[2] == "partial"
    if not isinstance(arg, (ast.Name, ast.Attribute)):
        return False
    given = resolver.resolve(arg, scope)
    return not given.is_class and (given.function is not None or bool(given.factory))


def module_taker(resolver: Context, node: ast.Call, scope: Scope) -> str:
    """The name of the callee when ``node`` passes a module as its first argument by what
    the callee is (`known.MODULE_WRAPPERS` by name, `known.MODULE_TAKERS` by import); ``""``."""
    path = dotted(node.func) or ""
    name = path.rpartition(".")[2]
    if name in known.MODULE_WRAPPERS:
        return name
    origin = import_origin(resolver, path, scope) if path else ""
    return origin if origin in known.MODULE_TAKERS else ""
