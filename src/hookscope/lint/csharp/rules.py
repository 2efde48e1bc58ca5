"""TorchSharp (C#) sources: HS201/HS202, parsed with tree-sitter (the ``csharp`` extra).

A receiver of ``x.forward(...)`` resolved (`resolve`, `types`) to a module with hooks gives
HS201, fixable to ``x.call(...)``; an unresolved one gives HS202, a guess that is never
fixed and runs only when selected by its full code. tree-sitter is imported on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from hookscope.errors import require_extra
from hookscope.lint.csharp.index import scan_csharp
from hookscope.lint.engine.findings import Edit, Finding
from hookscope.lint.engine.index import ClassIndex, merge
from hookscope.lint.engine.registry import Rule

if TYPE_CHECKING:  # imported when a C# file is checked: a Python-only run never needs them
    from hookscope.lint.csharp.resolve import Typed
    from hookscope.lint.csharp.types import Hierarchy

# ``base.forward(...)`` / ``this.forward(...)``: the module's own forward (node names of
# older and newer tree-sitter-c-sharp grammars).
_EXEMPT_RECEIVERS = frozenset({"base", "this", "base_expression", "this_expression"})


@lru_cache(maxsize=1)
def _parser() -> Any:
    tree_sitter: Any = require_extra("tree_sitter", "csharp")
    grammar: Any = require_extra("tree_sitter_c_sharp", "csharp")
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


class CSharpRule(Rule):
    """A rule over C# files."""

    language = "csharp"

    def check(self, path: str, data: bytes, root: Any, index: ClassIndex) -> Iterator[Finding]:
        """Yield the findings of this rule for one parsed file and the project index."""
        raise NotImplementedError


def parse_csharp(data: bytes) -> Any:
    """The tree-sitter root node of a C# source."""
    return _parser().parse(data).root_node


def file_index(data: bytes) -> ClassIndex:
    """The class index of one C# file alone (when no project index is at hand)."""
    return merge(scan_csharp(data))


_HIERARCHIES: dict[int, tuple[ClassIndex, Hierarchy]] = {}


def _hierarchy(index: ClassIndex) -> Hierarchy:
    """One `Hierarchy` (and its caches) per index object, shared by the files of a run."""
    from hookscope.lint.csharp.types import Hierarchy

    cached = _HIERARCHIES.get(id(index))
    if cached is None or cached[0] is not index:
        _HIERARCHIES.clear()
        cached = _HIERARCHIES[id(index)] = (index, Hierarchy(index))
    return cached[1]


def forward_calls(root: Any) -> Iterator[tuple[Any, Any, Any]]:
    """``(call, receiver, name)`` nodes of every ``receiver.forward(...)`` / ``receiver?.forward(...)``."""
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type != "invocation_expression":
            continue
        func = node.child_by_field_name("function")
        if func is None:
            continue
        if func.type == "member_access_expression":
            name = func.child_by_field_name("name")
            receiver = func.child_by_field_name("expression")
        elif func.type == "conditional_access_expression":
            receiver = func.child_by_field_name("condition")
            bindings = [c for c in func.named_children if c.type == "member_binding_expression"]
            name = bindings[-1].child_by_field_name("name") if bindings else None
        else:
            continue
        if name is not None and receiver is not None and name.text == b"forward":
            yield node, receiver, name


class _ForwardRule(CSharpRule):
    """``x.forward(...)`` calls whose receiver's module-ness is `verdict`."""

    verdict: ClassVar[bool | None]

    def check(self, path: str, data: bytes, root: Any, index: ClassIndex) -> Iterator[Finding]:
        from hookscope.lint.csharp.resolve import FileResolver

        resolver = FileResolver(_hierarchy(index))
        lines = data.split(b"\n")
        for call, receiver, name in forward_calls(root):
            if receiver.type in _EXEMPT_RECEIVERS:
                continue
            typed = resolver.type_of(receiver)
            if resolver.hierarchy.is_module(typed.type) is self.verdict:
                yield self._finding(path, lines, call, name, _text(receiver), typed)

    def _finding(
        self, path: str, lines: list[bytes], node: Any, name: Any, receiver: str, typed: Typed
    ) -> Finding:
        def pos(point: Any) -> tuple[int, int]:
            row, col = point
            return row + 1, len(lines[row][:col].decode("utf-8", "replace"))

        line, col = pos(node.start_point)
        end_line, end_col = pos(node.end_point)
        name_line, name_col = pos(name.start_point)
        edits = (Edit(name_line, name_col, name_line, name_col + len("forward"), "call"),)
        short = " ".join(receiver.split())
        return Finding(
            path=path,
            line=line,
            col=col + 1,
            end_line=end_line,
            end_col=end_col + 1,
            code=self.code,
            message=self.message.format(
                receiver=short if len(short) <= 40 else short[:37] + "...", how=_how(typed)
            ),
            severity=self.severity,
            fixable=self.fixable,
            edits=edits if self.fixable else (),
            confidence="resolved" if self.verdict else "guess",
            resolution=typed.how,
        )


class TorchSharpForwardRule(_ForwardRule):
    """HS201: ``x.forward(...)`` on a TorchSharp module skips its hooks; ``x.call(...)`` runs them."""

    code = "HS201"
    name = "torchsharp-direct-forward"
    message = (
        "`{receiver}.forward(...)` skips every hook on `{receiver}`: in TorchSharp only "
        "`call()` runs hooks. Call `{receiver}.call(...)` instead (resolved: {how})."
    )
    severity = "error"
    fixable = True
    verdict = True


class TorchSharpPossibleForwardRule(_ForwardRule):
    """HS202: ``x.forward(...)`` where the type of ``x`` is not resolved; a guess, never fixed."""

    code = "HS202"
    name = "torchsharp-possible-direct-forward"
    message = (
        "`{receiver}.forward(...)` may skip hooks: whether `{receiver}` is a TorchSharp module "
        "is unknown ({how}), so this is a guess. If it is one, call `{receiver}.call(...)`."
    )
    severity = "warning"
    fixable = False
    default = False
    verdict = None


def _how(typed: Typed) -> str:
    if typed.type is None:
        return "its type is not resolved"
    return typed.how or str(typed.type)


def _text(node: Any) -> str:
    return str(node.text.decode("utf-8", "replace"))


RULES = (TorchSharpForwardRule, TorchSharpPossibleForwardRule)
