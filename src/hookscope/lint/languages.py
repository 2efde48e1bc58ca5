"""The front ends the lint runs, and every rule they bring.

The one place that names both `python` and `csharp`: the engine receives them as
`Language` values, and neither front end imports the other.
"""

from __future__ import annotations

from collections.abc import Iterable

from hookscope.lint.csharp.frontend import CSHARP
from hookscope.lint.engine import registry
from hookscope.lint.engine.language import Language
from hookscope.lint.engine.registry import Rule, UnreadableFileRule
from hookscope.lint.python.frontend import PYTHON

LANGUAGES: tuple[Language, ...] = (PYTHON, CSHARP)


def all_rules() -> list[type[Rule]]:
    """Every rule, sorted by code: HS000 and those of each front end."""
    rules: list[type[Rule]] = [UnreadableFileRule]
    rules += [rule for lang in LANGUAGES for rule in lang.rules]
    return sorted(rules, key=lambda rule: rule.code)


def select_codes(
    select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> frozenset[str]:
    """Codes of every rule enabled by ``select`` minus ``ignore`` (`registry.select_codes`).

    Raises:
        UsageError: a prefix that matches no rule, e.g. ``HS9``.
    """
    return registry.select_codes(all_rules(), select, ignore)
