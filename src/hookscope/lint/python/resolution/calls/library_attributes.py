"""Attributes of library objects that their library documents as torch modules.

stable-baselines3's algorithms (``PPO``, ``SAC``, ...; sb3-contrib's too) are plain
classes, but their ``policy`` is a ``BasePolicy``, an ``nn.Module`` (``BaseAlgorithm.policy``
in its documentation): ``model = PPO("MlpPolicy", env); model.policy.forward(obs)``.
"""

from __future__ import annotations

import ast

from hookscope.lint.python.parse.bindings import dotted
from hookscope.lint.python.parse.pyfile import Scope
from hookscope.lint.python.resolution.context import Context
from hookscope.lint.python.resolution.crossfile import import_origin
from hookscope.lint.python.resolution.kinds import Kind, Resolved

_SB3_PACKAGES = ("stable_baselines3", "sb3_contrib")
_SB3_ALGORITHMS = frozenset(
    {"A2C", "DDPG", "DQN", "PPO", "SAC", "TD3"}
    | {"ARS", "CrossQ", "MaskablePPO", "QRDQN", "RecurrentPPO", "TQC", "TRPO"}
)
_SB3_MODULE_ATTRIBUTES = frozenset({"policy"})


def library_attribute(resolver: Context, expr: ast.Attribute, scope: Scope) -> Resolved | None:
    """``expr`` when it is a documented module attribute of a library object that
    ``expr.value`` is (built by ``PPO(...)`` or ``PPO.load(...)``, by that name or bound
    to one there); ``None`` otherwise."""
    if expr.attr not in _SB3_MODULE_ATTRIBUTES:
        return None
    origin = _made_by(resolver, expr.value, scope)
    package, _, name = origin.rpartition(".")
    if name not in _SB3_ALGORITHMS or package.partition(".")[0] not in _SB3_PACKAGES:
        return None
    via = f"{name}(...).{expr.attr} is a stable-baselines3 policy, a torch module"
    return Resolved(Kind.MODULE, name=expr.attr, via=via)


def _made_by(resolver: Context, value: ast.expr, scope: Scope) -> str:
    """The imported class (``stable_baselines3.PPO``) whose constructor or ``load`` made
    ``value``, a call or a name every binding of which is such a call; else ``""``."""
    if isinstance(value, ast.Name):
        current: Scope | None = scope
        while current is not None:
            bindings = resolver.bindings_of(current.node).get(value.id) if current.node else None
            if bindings:
                break
            current = current.parent
        else:
            return ""
        assert current is not None
        made = {
            _made_by(resolver, b.expr, current)
            if b.kind == "value" and isinstance(b.expr, ast.Call)
            else ""
            for b in bindings
        }
        return made.pop() if len(made) == 1 else ""
    if not isinstance(value, ast.Call):
        return ""
    path = dotted(value.func) or ""
    path = path.removesuffix(".load")  # ``PPO.load("ppo_cartpole")``, a classmethod
    return import_origin(resolver, path, scope) if path else ""
