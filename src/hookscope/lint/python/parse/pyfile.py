"""One parsed Python file: its calls with their enclosing class, function and loops.

Rules read this; none of them walks the tree again. AST columns are UTF-8 byte
offsets; `PyFile.char_col` turns them into character columns for findings and edits.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field

from hookscope.lint.python.parse.bindings import child_nodes, dotted, walk

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
LOOP_NODES = (ast.For, ast.AsyncFor, ast.While, *_COMPREHENSIONS)


@dataclass(eq=False)
class Scope:
    """A function (or the module, or a class body) and what encloses it.

    Attributes:
        node: the function, class or module node.
        parent: the enclosing scope (``None`` for the module).
        cls: the class whose method (or nested function) this is.
        method: the method of ``cls`` that contains this scope.
        self_name: the name of the method's first parameter (``self``), if any.
    """

    node: ast.AST
    parent: Scope | None
    cls: ast.ClassDef | None = None
    method: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    self_name: str | None = None
    _calls: list[ast.Call] | None = field(default=None, repr=False)
    _scripting: list[tuple[int, int]] | None = field(default=None, repr=False)

    def calls(self) -> list[ast.Call]:
        """Every call under ``node``, nested functions included (found once per scope:
        rules ask for each call site of a long function)."""
        if self._calls is None:
            self._calls = [n for n in walk(self.node) if isinstance(n, ast.Call)]
        return self._calls

    def scripting_lines(self) -> list[tuple[int, int]]:
        """First and last line of the body of each ``if ...is_scripting():`` under ``node``."""
        if self._scripting is None:
            self._scripting = [
                (n.body[0].lineno, n.body[-1].end_lineno or n.body[-1].lineno)
                for n in ast.walk(self.node)
                if isinstance(n, ast.If)
                and isinstance(n.test, ast.Call)
                and (dotted(n.test.func) or "").endswith("is_scripting")
            ]
        return self._scripting


@dataclass(frozen=True, eq=False)
class CallSite:
    """A call and its context."""

    node: ast.Call
    parent: ast.AST
    scope: Scope
    loops: tuple[ast.AST, ...]
    stmt: ast.stmt | None


@dataclass(eq=False)
class PyFile:
    """A parsed file and the call sites found in it."""

    path: str
    text: str
    tree: ast.Module
    lines: list[str] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    scopes: dict[int, Scope] = field(default_factory=dict)
    imports_torch: bool = False
    declares_global: bool = False
    _by_name: dict[int, dict[str, list[ast.stmt]]] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(
        cls,
        path: str,
        text: str,
        *,
        lines: list[str] | None = None,
        mentions: list[int] | None = None,
    ) -> PyFile:
        """Parse ``text``; raises `SyntaxError` (or `ValueError` for NUL bytes)."""
        tree = ast.parse(text, filename=path)
        return cls.from_tree(path, text, tree, lines=lines, mentions=mentions)

    @classmethod
    def from_tree(
        cls,
        path: str,
        text: str,
        tree: ast.Module,
        *,
        lines: list[str] | None = None,
        mentions: list[int] | None = None,
    ) -> PyFile:
        """Wrap an already parsed ``tree`` of ``text``; ``lines`` (``text.split("\\n")``) and
        ``mentions`` (`mention_lines`) are computed here unless given."""
        pyfile = cls(path, text, tree, lines if lines is not None else text.split("\n"))
        pyfile.imports_torch = "torch" in text
        # Asked for every name resolved: a scan of the text each time is quadratic.
        pyfile.declares_global = "global " in text
        _Walker(pyfile, mentions if mentions is not None else mention_lines(text)).run()
        return pyfile

    def body_by_name(self, owner: ast.AST) -> dict[str, list[ast.stmt]]:
        """The statements of ``owner``'s own body by the name they bind (a ``def``'s name, or
        the name assigned as a value: ``Cls.forward = name``), in order; built once per body
        (a scan per call site would be quadratic on a large file)."""
        key = id(owner)
        if key not in self._by_name:
            named: dict[str, list[ast.stmt]] = {}
            body = getattr(owner, "body", [])
            for stmt in body if isinstance(body, list) else []:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    named.setdefault(stmt.name, []).append(stmt)
                elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name):
                    named.setdefault(stmt.value.id, []).append(stmt)
            self._by_name[key] = named
        return self._by_name[key]

    def char_col(self, lineno: int, byte_col: int) -> int:
        """The 0-based character column of a byte offset on a 1-based line."""
        if lineno > len(self.lines):
            return byte_col
        line = self.lines[lineno - 1]
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """``(line, col, end_line, end_col)`` of a node, columns in characters, 0-based."""
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line = node.end_lineno or line  # type: ignore[attr-defined]
        end_col = node.end_col_offset or col  # type: ignore[attr-defined]
        return line, self.char_col(line, col), end_line, self.char_col(end_line, end_col)

    def segment(self, line: int, col: int, end_line: int, end_col: int) -> str:
        """The text between two character positions (lines 1-based, columns 0-based)."""
        if line == end_line:
            return self.lines[line - 1][col:end_col]
        parts = [self.lines[line - 1][col:], *self.lines[line : end_line - 1]]
        parts.append(self.lines[end_line - 1][:end_col])
        return "\n".join(parts)


# One literal pattern per word: an alternation has no literal prefix to search for,
# so it tries every position of the text (about twice as slow on large files).
_HOT_WORDS = tuple(re.compile(word) for word in ("forward", "_hook", "compile"))
# Statements that can hold statements (or handlers and cases that do); any other
# statement holds only expressions, which are walked only when they are hot.
_COMPOUND = (
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


class _Walker:
    """Records calls with their scope, loops, parent and statement.

    Every statement is visited (every class and function gets its scope), but expressions
    only on lines that mention ``forward``, ``_hook`` or ``compile``: the rules look at no
    other calls, and skipping them makes the walk several times cheaper than the parse.
    """

    def __init__(self, pyfile: PyFile, hot: list[int]) -> None:
        self.file = pyfile
        self.scope = Scope(pyfile.tree, None)
        pyfile.scopes[id(pyfile.tree)] = self.scope
        self.loops: list[ast.AST] = []
        self.stmt: ast.stmt | None = None
        self.hot = hot

    def run(self) -> None:
        self.visit_body(self.file.tree.body)

    def is_hot(self, node: ast.AST) -> bool:
        line = getattr(node, "lineno", None)
        if line is None:
            return True
        end = getattr(node, "end_lineno", None) or line
        i = bisect.bisect_left(self.hot, line)
        return i < len(self.hot) and self.hot[i] <= end

    def visit_body(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.visit_stmt(stmt)

    def visit_stmt(self, node: ast.stmt) -> None:
        self.stmt = node
        if isinstance(node, ast.ClassDef):
            self.visit_class(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.visit_function(node)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.visit_exprs(node, [node.target, node.iter])
            self.loops.append(node)
            self.visit_body(node.body)
            self.loops.pop()
            self.visit_body(node.orelse)
        elif isinstance(node, ast.While):
            self.loops.append(node)
            self.visit_exprs(node, [node.test])
            self.visit_body(node.body)
            self.loops.pop()
            self.visit_body(node.orelse)
        elif not isinstance(node, _COMPOUND) and not self.is_hot(node):
            return  # a simple statement holds no statement, and no hot expression here
        else:
            self.visit_fields(node)

    def visit_fields(self, node: ast.AST) -> None:
        for name in node._fields:  # `ast.iter_fields`, without its generator
            value = getattr(node, name, None)
            items = value if isinstance(value, list) else [value]
            for item in items:
                if isinstance(item, ast.stmt):
                    stmt = self.stmt
                    self.visit_stmt(item)
                    self.stmt = stmt
                elif isinstance(item, (ast.excepthandler, ast.match_case)):
                    self.visit_fields(item)
                elif isinstance(item, ast.AST):
                    self.visit_exprs(node, [item])

    def visit_exprs(self, parent: ast.AST, nodes: list[ast.AST]) -> None:
        for node in nodes:
            if self.is_hot(node):
                self.visit(node, parent)

    def visit(self, node: ast.AST, parent: ast.AST) -> None:
        if isinstance(node, ast.Call):
            site = CallSite(node, parent, self.scope, tuple(self.loops), self.stmt)
            self.file.calls.append(site)
        if isinstance(node, ast.Lambda):
            self.visit_function(node)
        elif isinstance(node, LOOP_NODES):
            self.visit_children(node, child_nodes(node), loop=True)
        else:
            self.visit_children(node, child_nodes(node), loop=False)

    def visit_children(self, node: ast.AST, children: list[ast.AST], *, loop: bool) -> None:
        if loop:
            self.loops.append(node)
        for child in children:
            self.visit(child, node)
        if loop:
            self.loops.pop()

    def visit_class(self, node: ast.ClassDef) -> None:
        self.file.classes.setdefault(node.name, node)
        self.visit_exprs(node, [*node.decorator_list, *node.bases, *node.keywords])
        saved, saved_loops = self.scope, self.loops
        self.scope, self.loops = Scope(node, saved, cls=node), []
        self.visit_body(node.body)
        self.scope, self.loops = saved, saved_loops

    def visit_function(self, node: FunctionNode) -> None:
        outer: list[ast.AST] = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        if not isinstance(node, ast.Lambda):
            outer.extend(node.decorator_list)
        self.visit_exprs(node, outer)
        saved, saved_loops = self.scope, self.loops
        self.scope, self.loops = _function_scope(node, saved), []
        self.file.scopes[id(node)] = self.scope
        if isinstance(node, ast.Lambda):
            self.visit(node.body, node)
        else:
            self.visit_body(node.body)
        self.scope, self.loops = saved, saved_loops


def mention_lines(text: str) -> list[int]:
    """The 1-based numbers of the lines that mention ``forward``, ``_hook`` or ``compile``."""
    lines: list[int] = []
    line, last = 1, 0
    for start in sorted(m.start() for word in _HOT_WORDS for m in word.finditer(text)):
        line += text.count("\n", last, start)
        last = start
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _function_scope(node: FunctionNode, outer: Scope) -> Scope:
    if isinstance(outer.node, ast.ClassDef) and not isinstance(node, ast.Lambda):
        static = any(_decorator_name(d) == "staticmethod" for d in node.decorator_list)
        args = [*node.args.posonlyargs, *node.args.args]
        self_name = args[0].arg if args and not static else None
        return Scope(node, outer, cls=outer.node, method=node, self_name=self_name)
    return Scope(node, outer, cls=outer.cls, method=outer.method, self_name=outer.self_name)


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""
