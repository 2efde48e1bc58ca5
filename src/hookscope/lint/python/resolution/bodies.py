"""A class whose bases cannot be resolved, told a module by its own body.

A class built on a base from outside the scanned tree (a fairseq model, an SDK's layer)
is still proved a module when only an ``nn.Module`` subclass could do what it does: in
``__init__``, after the base ``__init__``, assign a ``torch.nn`` layer or parameter to
``self`` (losses left out: trainers hold those too); call a module-only method on
``self`` that it does not define (``self.register_buffer(...)``); read ``self.training``
in ``forward`` without setting it. A ``forward`` alone is no evidence (OpenVINO and ONNX
Runtime wrappers have one).
"""

from __future__ import annotations

import ast
import weakref
from typing import TypeGuard

from hookscope.lint.python.facts import known
from hookscope.lint.python.parse.bindings import dotted

# Module-only methods a class calls on itself: `known.MODULE_ONLY_METHODS` without those
# wrappers define too (``eval``, ``zero_grad``, ``load_state_dict``, ``requires_grad_``)
# and those a class rarely calls on itself.
_SELF_MODULE_METHODS = known.MODULE_ONLY_METHODS - known.names(
    "eval zero_grad load_state_dict requires_grad_ _call_impl get_parameter register_backward_hook"
)
_LAYERS = (known.TORCH_NN_MODULES - {"Module"}) | {"Parameter"}
Function = ast.FunctionDef | ast.AsyncFunctionDef

# tree -> (prefixes spelling ``torch.nn.``, {bare name: torch.nn class}), by its imports
_TORCH_NN: weakref.WeakKeyDictionary[ast.Module, tuple[tuple[str, ...], dict[str, str]]]
_TORCH_NN = weakref.WeakKeyDictionary()


def module_evidence(cls: ast.ClassDef, path: str, tree: ast.Module) -> str:
    """What in ``cls``'s body (in the file ``tree``) shows it is an ``nn.Module``
    (``self.fc = nn.Linear(...) at x.py:12``), or ``""``. Only a file that imports torch
    can show it: paddle, MXNet and flax have an ``nn.Linear`` and a ``parameters()`` too."""
    prefixes, bare = _torch_nn(tree)
    if not prefixes and not bare:
        return ""
    methods = {
        s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    # ``self.modules = Net()``: an attribute of that name, not ``nn.Module.modules``
    defined = set(methods) | _assigned_on_self(cls)
    init = methods.get("__init__")
    if init is not None and _calls_base_init(init):
        found = _layer_assigned(init, prefixes, bare)
        if found is not None:
            return f"{_shown(found)} at {path}:{found.lineno}"
    for method in methods.values():
        args = [*method.args.posonlyargs, *method.args.args]
        decorators = {dotted(d) for d in method.decorator_list}
        if not args or decorators & {"classmethod", "staticmethod"}:
            continue  # the first parameter is not the instance
        self_name = args[0].arg
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Call)
                and _of_name(node.func, self_name)
                and node.func.attr in _SELF_MODULE_METHODS
                and node.func.attr not in defined
            ):
                return f"{_shown(node)} at {path}:{node.lineno}"
    return _training_in_forward(cls, methods.get("forward"), path)


def _assigned_on_self(cls: ast.ClassDef) -> set[str]:
    """The module-only method names the class's methods assign as attributes
    (``self.modules = ...``), which its calls of them then reach instead."""
    return {
        node.attr
        for node in ast.walk(cls)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and node.attr in _SELF_MODULE_METHODS
        and isinstance(node.value, ast.Name)
    }


def _training_in_forward(cls: ast.ClassDef, forward: Function | None, path: str) -> str:
    """``self.training`` read in the class's own ``forward`` (``nn.Module``'s train/eval
    flag), when no method of the class sets ``self.training`` itself."""
    args = [*forward.args.posonlyargs, *forward.args.args] if forward is not None else []
    if forward is None or not args:
        return ""
    self_name = args[0].arg
    reads = (n for n in ast.walk(forward) if _of_name(n, self_name) and n.attr == "training")
    read = next((n for n in reads if isinstance(n.ctx, ast.Load)), None)
    if read is None or any(
        isinstance(n, ast.Attribute) and n.attr == "training" and isinstance(n.ctx, ast.Store)
        for n in ast.walk(cls)
    ):
        return ""
    return f"{self_name}.training read in forward at {path}:{read.lineno}"


def _calls_base_init(init: Function) -> bool:
    """``super().__init__(...)``, ``super(Cls, self).__init__(...)`` or ``Base.__init__(self)``."""
    for node in ast.walk(init):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__init__"
        ):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Call) and dotted(owner.func) == "super":
            return True
        if isinstance(owner, (ast.Name, ast.Attribute)) and node.args:
            return True  # ``Base.__init__(self, ...)``
    return False


def _torch_nn(tree: ast.Module) -> tuple[tuple[str, ...], dict[str, str]]:
    """How the file spells ``torch.nn``: ``nn.`` after ``from torch import nn``,
    ``torch.nn.`` after ``import torch``, and the names it imports from ``torch.nn``."""
    found = _TORCH_NN.get(tree)
    if found is not None:
        return found
    prefixes: list[str] = []
    bare: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch":
                    prefixes.append(f"{alias.asname or 'torch'}.nn.")
                elif alias.name == "torch.nn":
                    prefixes.append(f"{alias.asname}." if alias.asname else "torch.nn.")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if node.module == "torch" and alias.name == "nn":
                    prefixes.append(f"{alias.asname or 'nn'}.")
                elif node.module.startswith("torch.nn"):
                    bare[alias.asname or alias.name] = alias.name
    found = _TORCH_NN[tree] = (tuple(prefixes), bare)
    return found


def _layer_assigned(
    init: Function, prefixes: tuple[str, ...], bare: dict[str, str]
) -> ast.Assign | None:
    """The first ``self.x = nn.<Layer>(...)`` of ``__init__`` (``torch.nn`` as the file
    spells it)."""
    args = [*init.args.posonlyargs, *init.args.args]
    self_name = args[0].arg if args else "self"
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            path = dotted(node.value.func) or ""
            layer = bare.get(path, "") if "." not in path else path.rpartition(".")[2]
            if (
                (path.startswith(prefixes) or path in bare)
                and layer in _LAYERS
                and not layer.endswith("Loss")
                and any(_of_name(t, self_name) for t in node.targets)
            ):
                return node
    return None


def _of_name(node: ast.AST, name: str) -> TypeGuard[ast.Attribute]:
    """Whether ``node`` is an attribute of the bare name ``name`` (``self.fc``)."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
    )


def _shown(node: ast.AST) -> str:
    """``self.fc = nn.Linear(...)``: the statement with its arguments elided."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        targets = " = ".join(ast.unparse(t) for t in node.targets)
        return f"{targets} = {ast.unparse(node.value.func)}(...)"
    if isinstance(node, ast.Call):
        return f"{ast.unparse(node.func)}(...)"
    return ast.unparse(node)


def returned_module(func: Function, returns: list[ast.expr], lookalikes: frozenset[str]) -> str:
    """What shows that a function returns a module: every return gives one local name, on
    which it calls a module-only method (``model.eval()``; not one of ``lookalikes``)
    outside nested functions; ``""`` when nothing does."""
    names = {r.id for r in returns if isinstance(r, ast.Name)}
    if len(names) != 1 or len(returns) != sum(isinstance(r, ast.Name) for r in returns):
        return ""
    (name,) = names
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if (
            isinstance(node, ast.Call)
            and _of_name(node.func, name)
            and node.func.attr in known.MODULE_ONLY_METHODS
            and node.func.attr not in lookalikes
        ):
            return f"{name}.{node.func.attr}() in {func.name}() at line {node.lineno}"
        todo.extend(ast.iter_child_nodes(node))
    return ""
