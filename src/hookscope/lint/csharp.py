"""TorchSharp (C#) sources: HS201, parsed with tree-sitter (the ``csharp`` extra).

tree-sitter is imported on first use only, so Python-only users never need it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from hookscope.errors import require_extra
from hookscope.lint.findings import Edit, Finding
from hookscope.lint.registry import Rule, register

_EXEMPT_RECEIVERS = frozenset({"base", "this"})


@lru_cache(maxsize=1)
def _parser() -> Any:
    tree_sitter: Any = require_extra("tree_sitter", "csharp")
    grammar: Any = require_extra("tree_sitter_c_sharp", "csharp")
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


class CSharpRule(Rule):
    """A rule over C# files."""

    language = "csharp"

    def check(self, path: str, data: bytes, root: Any) -> Iterator[Finding]:
        """Yield the findings of this rule for one parsed file."""
        raise NotImplementedError


def parse_csharp(data: bytes) -> Any:
    """The tree-sitter root node of a C# source."""
    return _parser().parse(data).root_node


@register
class TorchSharpForwardRule(CSharpRule):
    """HS201: ``x.forward(...)`` in TorchSharp skips ``x``'s hooks; ``x.call(...)`` runs them."""

    code = "HS201"
    name = "torchsharp-direct-forward"
    message = (
        "`{receiver}.forward(...)` skips every hook on `{receiver}`: in TorchSharp only "
        "`call()` runs hooks. Call `{receiver}.call(...)` instead."
    )
    severity = "error"
    fixable = True

    def check(self, path: str, data: bytes, root: Any) -> Iterator[Finding]:
        lines = data.split(b"\n")
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(reversed(node.children))
            if node.type != "invocation_expression":
                continue
            func = node.child_by_field_name("function")
            if func is None or func.type != "member_access_expression":
                continue
            name = func.child_by_field_name("name")
            receiver = func.child_by_field_name("expression")
            if name is None or receiver is None or name.text != b"forward":
                continue
            if receiver.type in _EXEMPT_RECEIVERS:
                continue
            yield self._finding(path, lines, node, name, receiver.text.decode("utf-8", "replace"))

    def _finding(
        self, path: str, lines: list[bytes], node: Any, name: Any, receiver: str
    ) -> Finding:
        def pos(point: Any) -> tuple[int, int]:
            row, col = point
            return row + 1, len(lines[row][:col].decode("utf-8", "replace"))

        line, col = pos(node.start_point)
        end_line, end_col = pos(node.end_point)
        name_line, name_col = pos(name.start_point)
        edit = Edit(name_line, name_col, name_line, name_col + len("forward"), "call")
        short = " ".join(receiver.split())
        return Finding(
            path=path,
            line=line,
            col=col + 1,
            end_line=end_line,
            end_col=end_col + 1,
            code=self.code,
            message=self.message.format(receiver=short if len(short) <= 40 else short[:37] + "..."),
            severity=self.severity,
            fixable=True,
            edits=(edit,),
        )
