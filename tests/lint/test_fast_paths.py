"""The shortcuts of the scan, the mask and the walker find what the plain ways find."""

from __future__ import annotations

import ast
import gc
import os
import random
import re
import weakref
from pathlib import Path

import pytest

from hookscope.lint import discover
from hookscope.lint.engine.discovery import DEFAULT_EXCLUDE, SUFFIXES, _exclusion
from hookscope.lint.engine.index import ClassIndex
from hookscope.lint.engine.source import _read, read_bytes
from hookscope.lint.python.index.classes import (
    _SELF_ANNOTATION,
    _from_imports,
    scan_classes,
    scan_definitions,
)
from hookscope.lint.python.index.functions import scan_functions
from hookscope.lint.python.parse import bindings, regions
from hookscope.lint.python.parse.pyfile import PyFile, mention_lines
from hookscope.lint.python.rules.analysis import Analysis
from hookscope.lint.python.rules.forward import receivers

TRICKY = "\n".join(
    [
        "import torch",
        "y = m.forward(x)",
        "z = super().forward(x)",
        "z = super()",
        ".forward(x)",  # per line: nothing before the dot
        "w = m.\x0bforward(x)",  # a vertical tab is a blank to \\s
        "v = m.\u2028forward(x)",  # so is a line separator (str.split('\\n') keeps it)
        "u = m.forwarding(x)",  # the word, but not the call
        "h = m.register_forward_hook(f)",
        "self._hooks = []",  # "_hook" without a registration
        "c = torch.compile(m)",
        "    if ok: model.forward(1); other.forward(2)",
        "",
        "s = 'forward _hook compile'",
    ]
)


def test_hot_lines_of_the_mask_are_those_a_per_line_search_finds() -> None:
    lines = TRICKY.split("\n")
    expected = [i for i, line in enumerate(lines) if regions._HOT.search(line)]
    assert regions._hot_lines(TRICKY, lines) == expected
    assert 6 in expected and 7 not in expected and 9 not in expected  # the cases are real


def test_hot_lines_of_the_walker_are_the_lines_with_the_words() -> None:
    words = ("forward", "_hook", "compile")
    expected = [n for n, line in enumerate(TRICKY.split("\n"), 1) if any(w in line for w in words)]
    assert mention_lines(TRICKY) == expected


def test_the_walker_finds_hot_calls_in_every_kind_of_statement() -> None:
    source = """
import torch

a = m.forward(1)
a += m.forward(2)
b: int = m.forward(3)
m.forward(4)
assert m.forward(5)
if cond:
    m.forward(6)
elif other:
    m.forward(7)
else:
    m.forward(8)
with ctx() as c:
    m.forward(9)
try:
    m.forward(10)
except ValueError:
    m.forward(11)
finally:
    m.forward(12)
match value:
    case 1:
        m.forward(13)
for i in range(2):
    m.forward(14)
while cond:
    m.forward(15)


def f():
    x = 1
    return m.forward(16)


class C:
    y = 2
    z = m.forward(17)
"""
    pyfile = PyFile.parse("t.py", source)
    arguments = [
        site.node.args[0].value  # type: ignore[attr-defined]
        for site in pyfile.calls
        if isinstance(site.node.func, ast.Attribute) and site.node.func.attr == "forward"
    ]
    assert arguments == list(range(1, 18))


def test_returned_calls_are_kept_only_when_every_return_calls() -> None:
    source = b"""def a():
    return Net()


def b(x):
    if x:
        return Net()
    return make(1)


def c():
    return None


def d():
    s = "return return(1)"
    return f()


async def e():
    return pkg.Model(2)
"""
    entries = {name: calls for name, _, calls, _ in scan_functions(source, "m.py")}
    assert entries == {
        "a": ("Net",),
        "b": ("Net", "make"),
        "c": (),
        "d": (),  # a "return" in a string counts as a return that calls nothing known
        "e": ("pkg.Model",),
    }


def test_bases_are_qualified_through_imports_only_when_bare() -> None:
    source = b"""from torch import nn
from .layers import Block as Base, Other
from unrelated import Thing


class Net(Base):
    pass


class Plain(nn.Module, Other):
    pass
"""
    classes = {name: bases for name, bases, _, _ in scan_classes(source, "pkg/sub/model.py")}
    assert classes == {
        "Net": ("pkg.sub.layers.Block",),
        "Plain": ("nn.Module", "pkg.sub.layers.Other"),
    }
    every = _from_imports(source, "pkg/sub/model.py")
    wanted = _from_imports(source, "pkg/sub/model.py", {"Base"})
    assert wanted["Base"] == every["Base"] and "Thing" in every and "Thing" not in wanted


def test_reads_in_several_chunks_give_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    data = bytes(range(256)) * 300  # 76,800 bytes: more than one 64 KiB block
    path.write_bytes(data)
    assert _read(str(path), 7, len(data) + 1) == data  # 7 bytes, then blocks
    assert _read(str(path), 7, 50) == data[:50]  # never more than the limit
    assert read_bytes(str(path)) == data
    (tmp_path / "empty.py").write_bytes(b"")
    assert read_bytes(str(tmp_path / "empty.py")) == b""


def test_a_file_no_bigger_than_stat_said_is_read_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.py"
    data = b"x = 1\n" * 5000
    path.write_bytes(data)
    calls: list[int] = []
    real = os.read

    def counted(fd: int, n: int) -> bytes:
        calls.append(n)
        return real(fd, n)

    monkeypatch.setattr(os, "read", counted)
    assert read_bytes(str(path)) == data
    assert calls == [len(data) + 1]  # the short read is the end: no second call
    calls.clear()
    assert _read(str(path), 100, len(data) + 1) == data  # asked too little: read on
    assert calls[0] == 100 and len(calls) > 1


def test_the_mask_keeps_the_hot_methods_and_drops_the_others() -> None:
    text = "import torch\n\n" + "\n".join(
        f"class C{i}(torch.nn.Module):\n"
        f"    def helper(self):\n"
        f"        return {i}\n\n"
        f"    def use(self, m):\n"
        f"        return m.forward({i})\n"
        for i in range(20)
    )
    masked = regions.mask(text)
    assert masked is not None
    assert "def helper" not in masked
    assert masked.count("def use(self, m):") == masked.count("m.forward(") == 20
    assert len(masked.split("\n")) == len(text.split("\n"))  # line numbers kept


def test_the_mask_sees_past_decorators_written_over_several_lines() -> None:
    text = "import torch\n\n\n@register(\n    name='c',\n)\nclass C(torch.nn.Module):\n"
    text += "".join(
        f"    @skip_if(\n        'why',\n    )\n    def helper{i}(self):\n        return {i}\n\n"
        for i in range(9)
    )
    masked = regions.mask(text + "    def use(self, m):\n        return m.forward(1)\n")
    assert masked is not None
    assert "def helper" not in masked and "class C" in masked and "m.forward(1)" in masked


def test_an_rpc_proxy_receiver_needs_no_whole_file_parse() -> None:
    # ``rref`` is a parameter: resolving it would look for the callers the mask dropped
    text = "import torch\n\n\ndef step(rref, x):\n    m = torch.nn.Linear(2, 2)\n"
    text += "    return rref.rpc_sync().forward(x), rref.remote().forward(x), m.forward(x)\n"
    text += "\n".join(f"\n\ndef helper{i}(rref):\n    return step(rref, {i})" for i in range(9))
    masked = regions.mask(text)
    assert masked is not None and "def helper" not in masked
    pyfile = PyFile.from_tree("f.py", text, ast.parse(masked))
    analysis = Analysis.of(pyfile, ClassIndex(), partial=True)
    found = [analysis.source(func.value) for _, func, _ in receivers(analysis)]
    assert found == ["m"]  # the two proxies left out, and nothing sent to a full parse
    assert not analysis.needs_full and not analysis.resolver.missed


def _walked(root: Path, exclude: list[str]) -> list[str]:
    """The files `discover` finds, the plain way: ``os.walk`` with pruned, sorted folders."""
    excluded = _exclusion((*DEFAULT_EXCLUDE, *exclude))
    found = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if not excluded(d, prefix + d))
        found.extend(
            os.path.join(folder, name)
            for name in sorted(files)
            if name.endswith(SUFFIXES) and not excluded(name, prefix + name)
        )
    return found


def test_discovery_walks_like_os_walk(tmp_path: Path) -> None:
    for rel in ["b.py", "a.pyi", "z.cs", "c.txt", "pkg/m.py", "pkg/sub/n.py", "gen/x.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pkg/__pycache__").mkdir()
    (tmp_path / "pkg/__pycache__/m.py").write_text("", encoding="utf-8")
    (tmp_path / "linked").symlink_to(tmp_path / "pkg", target_is_directory=True)  # not entered
    (tmp_path / "broken.py").symlink_to(tmp_path / "missing.py")  # listed: HS000 later
    (tmp_path / "file_link.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "dir.py").mkdir()  # a folder named like a file
    (tmp_path / "dir.py/inner.py").write_text("", encoding="utf-8")
    for given in (tmp_path, Path(f"{tmp_path}/")):
        for exclude in ([], ["gen", "pkg/sub/*"]):
            assert discover([given], exclude) == _walked(given, exclude)
    assert {Path(p).name for p in discover([tmp_path])} == {
        "b.py",
        "a.pyi",
        "z.cs",
        "m.py",
        "n.py",
        "x.py",
        "broken.py",
        "file_link.py",
        "inner.py",
    }


def test_a_scope_finds_its_calls_and_scripting_branches_once() -> None:
    source = (
        "import torch\n"
        "def f(m, x):\n"
        "    if torch.jit.is_scripting():\n"
        "        y = m.forward(x)\n"
        "        y = y + 1\n"
        "    return m.forward(g(x))\n"
    )
    pyfile = PyFile.parse("t.py", source)
    scope = pyfile.calls[0].scope
    calls = scope.calls()
    assert scope.calls() is calls  # found once, then reused by every call site's rules
    assert [ast.unparse(c) for c in calls] == [
        "torch.jit.is_scripting()",
        "m.forward(g(x))",
        "m.forward(x)",
        "g(x)",
    ]  # ast.walk's order, as the rules saw it before
    assert scope.scripting_lines() == [(4, 5)]


def _own_nodes_the_plain_way(body: list[ast.stmt]) -> list[ast.AST]:
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return out


def test_the_walks_give_the_nodes_and_the_order_of_the_ast_module() -> None:
    # Every function of hookscope's own sources: all kinds of statements and expressions.
    package = Path(bindings.__file__).parents[3]  # src/hookscope
    functions = [
        node
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    assert len(functions) > 1000
    for func in functions:
        assert bindings.own_nodes(func.body) == _own_nodes_the_plain_way(func.body)
        assert list(bindings.walk(func)) == list(ast.walk(func))
        for node in ast.walk(func):
            assert bindings.child_nodes(node) == list(ast.iter_child_nodes(node))


def test_what_a_function_returns_is_found_once_and_handed_out_as_new_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tree = ast.parse(
        "def build(flag):\n"
        "    def inner():\n"
        "        return 0\n"
        "    if flag:\n"
        "        return Net()\n"
        "    yield Other()\n"
        "    return make(lambda: (yield 1))\n"
    )
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    walks = []
    walk = bindings.own_nodes
    monkeypatch.setattr(bindings, "own_nodes", lambda body: walks.append(body) or walk(body))
    returns, yields = bindings.returned(func)
    assert [ast.unparse(e) for e in returns] == ["Net()", "make(lambda: (yield 1))"]
    assert [ast.unparse(e) for e in yields] == ["Other()"]
    first = list(returns)
    returns.clear()  # a caller's list is its own
    assert bindings.returned(func) == (first, yields)
    assert len(walks) == 1  # the second answer came from the cache


def test_the_cache_of_returns_lets_the_tree_go() -> None:
    tree = ast.parse("def f():\n    return g()\n")
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    bindings.returned(func)
    gone = weakref.ref(func)
    del tree, func
    gc.collect()
    assert gone() is None


def test_the_self_annotation_pattern_matches_like_the_backtracking_one() -> None:
    # The same matches as the plain pattern, each found at its "." (4 bytes on).
    plain = re.compile(rb"self\.(\w+)[ \t]*:[ \t]*([^=\n]+?)[ \t]*=")
    pieces = [b"self.", b"x", b"y1", b" ", b"\t", b":", b"=", b"\n", b"==", b"T", b"["]
    pieces += [b"s", b"elf.", b".", b"self"]
    rng = random.Random(0)
    matched = 0
    for _ in range(30_000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        expected = [((m.start() + 4, m.end()), m.groups()) for m in plain.finditer(text)]
        assert [(m.span(), m.groups()) for m in _SELF_ANNOTATION.finditer(text)] == expected
        matched += bool(expected)
    assert matched > 20  # the cases are real


def test_definitions_scanned_together_are_those_scanned_apart() -> None:
    # Lines counted once for classes and functions: the same locations either way.
    package = Path(bindings.__file__).parents[3]  # src/hookscope
    sources = [path.read_bytes() for path in sorted(package.rglob("*.py"))]
    sources.append(
        b"def a():\n    return A()\nclass B:\n    def m(self):\n        pass\n"
        b"\n\nasync def c():\n    pass\n    class D(B):\n        x = 1\ndef e(): ...\n"
    )
    for data in sources:
        together = scan_definitions(data, "pkg/m.py")
        assert together == (scan_classes(data, "pkg/m.py"), scan_functions(data, "pkg/m.py"))
    assert [where for *_, where in scan_definitions(sources[-1], "m.py")[1]] == [
        "m.py:1",
        "m.py:8",
        "m.py:12",
    ]
