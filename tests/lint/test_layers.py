"""The lint's layers, read from its own imports (module level, in functions, under TYPE_CHECKING)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hookscope.lint import engine

LINT = Path(engine.__file__).parents[1]
STRATEGIES = ("callers", "calls", "values", "evidence")


def _imports() -> dict[str, set[str]]:
    """``lint``-relative module -> the ``hookscope.lint`` modules it imports."""
    out: dict[str, set[str]] = {}
    for path in LINT.rglob("*.py"):
        name = ".".join(path.relative_to(LINT).with_suffix("").parts)
        found = out.setdefault(name.removesuffix(".__init__"), set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "hookscope.lint"
            ):
                base = (node.module or "").removeprefix("hookscope.lint").lstrip(".")
                found.update(f"{base}.{alias.name}".lstrip(".") for alias in node.names)
                found.add(base)
    return out


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [
        ("engine", ("python", "csharp", "languages")),  # the engine knows no language
        ("python", ("csharp", "languages")),  # the front ends never import each other
        ("csharp", ("python", "languages")),
    ],
)
def test_the_engine_and_the_front_ends_keep_apart(
    importer: str, forbidden: tuple[str, ...]
) -> None:
    crossing = {
        (module, target)
        for module, targets in _imports().items()
        if _under(module, importer)
        for target in targets
        if any(_under(target, f) for f in forbidden)
    }
    assert crossing == set()


def test_strategies_see_the_context_and_the_resolver_sees_the_registry() -> None:
    imports = _imports()
    resolution = "python.resolution"
    for module, targets in imports.items():
        if _under(module, resolution) and module not in (f"{resolution}.resolver",):
            assert f"{resolution}.resolver" not in targets, module
        if any(_under(module, f"{resolution}.{p}") for p in STRATEGIES):
            assert f"{resolution}.strategies" not in targets, module
    # The core (resolver, context, classes, ...) and the helpers (callsites/) reach the
    # strategies through the registry only.
    core = [
        m
        for m in imports
        if _under(m, resolution) and not any(_under(m, f"{resolution}.{p}") for p in STRATEGIES)
    ]
    for module in core:
        if module != f"{resolution}.strategies":
            reached = [
                t for t in imports[module] for p in STRATEGIES if _under(t, f"{resolution}.{p}")
            ]
            assert reached == [], module
    assert f"{resolution}.strategies" in imports[f"{resolution}.resolver"]


def test_no_strategy_module_imports_another() -> None:
    """A strategy module (callers/, calls/, values/, evidence/) imports no strategy module,
    of its own sub-package or another: what strategies share are helpers outside them."""
    imports = _imports()
    packages = [f"python.resolution.{p}" for p in STRATEGIES]
    strategy_modules = [m for m in imports if any(_under(m, p) and m != p for p in packages)]
    assert len(strategy_modules) > 10  # (the walk found them)
    crossing = {
        (module, target)
        for module in strategy_modules
        for target in imports[module]
        if any(_under(target, p) for p in packages)
    }
    assert crossing == set()


def test_no_module_of_the_lint_is_in_an_import_cycle() -> None:
    imports = _imports()
    graph = {m: {t for t in targets if t in imports and t != m} for m, targets in imports.items()}
    # A module is in a cycle when it can reach itself: walk from each one.
    in_cycles = []
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            current = todo.pop()
            if current == start:
                in_cycles.append(start)
                break
            if current not in seen:
                seen.add(current)
                todo.extend(graph[current])
    assert in_cycles == []
