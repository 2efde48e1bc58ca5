"""Autofix: formatting and comments kept, idempotent, always re-parses, and it works on torch."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from hookscope.lint import apply_edits, fix, lint, lint_run
from hookscope.lint.engine.findings import Edit, Finding
from tests.lint.conftest import FIXTURES

FIXABLE = {"HS101", "HS102", "HS113", "HS201"}


def _fix_in_place(path: Path) -> int:
    applied = 0
    for file_fix in fix(lint_run(path, config=False)):
        Path(file_fix.path).write_text(file_fix.fixed, encoding="utf-8")
        applied += file_fix.applied
    return applied


@pytest.mark.parametrize("name", ["forward_cases.py", "hooks_cases.py"])
def test_fix_round_trip_on_fixtures(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    before = lint(path, config=False)
    fixable_before = [f for f in before if f.fixable]
    assert fixable_before

    assert _fix_in_place(path) == len(fixable_before)
    text = path.read_text(encoding="utf-8")
    ast.parse(text)  # the result always re-parses
    after = lint(path, config=False)
    assert not [f for f in after if f.fixable]
    # What was not fixable is still reported, on the same lines.
    assert [(f.line, f.code) for f in after] == [(f.line, f.code) for f in before if not f.fixable]
    # Comments and line structure are preserved.
    original = (FIXTURES / name).read_text(encoding="utf-8")
    assert text.count("#") == original.count("#")
    assert len(text.splitlines()) == len(original.splitlines())
    # Idempotent: a second run changes nothing.
    assert _fix_in_place(path) == 0
    assert path.read_text(encoding="utf-8") == text


def test_fix_rewrites_exactly_the_call() -> None:
    run = lint_run(FIXTURES / "forward_cases.py", config=False)
    original = (FIXTURES / "forward_cases.py").read_text(encoding="utf-8").splitlines()
    fixed = fix(run)[0].fixed.splitlines()
    changed = {a.strip(): b.strip() for a, b in zip(original, fixed, strict=True) if a != b}
    assert changed["return self.lin.forward(x)  # HS101"] == "return self.lin(x)  # HS101"
    assert changed["x = self.seq.forward(  # HS101"] == "x = self.seq(  # HS101"
    assert changed["return self.forward(x)  # HS102"] == "return self(x)  # HS102"
    assert changed['c = inner.to("cpu").forward(x)  # HS101'] == 'c = inner.to("cpu")(x)  # HS101'


def test_fix_hs113_renames_the_method() -> None:
    run = lint_run(FIXTURES / "hooks_cases.py", config=False, select=["HS113"])
    fixed = fix(run)[0].fixed
    assert "h = model.register_full_backward_hook(hook)  # HS113" in fixed
    assert "register_backward_hook" not in fixed


def test_fix_torchsharp(tmp_path: Path) -> None:
    pytest.importorskip("tree_sitter_c_sharp")
    path = tmp_path / "net.cs"
    shutil.copy(FIXTURES / "torchsharp_cases.cs", path)
    assert _fix_in_place(path) == 2
    text = path.read_text(encoding="utf-8")
    assert "var y = lin.call(x); // HS201" in text
    assert "var z = this.lin.call(y); // HS201" in text
    assert "base.forward(u)" in text and "lin.forward(v); // noqa: HS201" in text
    assert lint(path, config=False) == []


def test_nested_calls_are_fixed_over_rounds(tmp_path: Path) -> None:
    path = tmp_path / "nested.py"
    path.write_text(
        "import torch\n\ndef f(model: torch.nn.Module, x):\n    return model.forward(model.forward(x))  # keep\n",
        encoding="utf-8",
    )
    _fix_in_place(path)
    assert path.read_text(encoding="utf-8").endswith("    return model(model(x))  # keep\n")


def test_comment_between_receiver_and_forward_is_not_fixable(tmp_path: Path) -> None:
    path = tmp_path / "comment.py"
    path.write_text(
        "import torch\n\ndef f(model: torch.nn.Module, x):\n    return (model  # why\n            .forward(x))\n",
        encoding="utf-8",
    )
    (finding,) = lint(path, config=False)
    assert finding.code == "HS101" and not finding.fixable


def test_apply_edits_handles_non_ascii_columns() -> None:
    text = "é = 1; m.forward(x)\n"
    col = text.index(".forward")
    finding = Finding(
        "f.py", 1, 1, 1, 1, "HS101", "m", "error", True, (Edit(1, col, 1, col + 8, ""),)
    )
    assert apply_edits(text, [finding]) == ("é = 1; m(x)\n", 1)


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.pop(name, None)
    spec.loader.exec_module(module)
    return module


MODEL_SOURCE = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)

    def forward(self, x):
        return self.inner.forward(x)
"""


def test_after_the_fix_the_skipped_hook_fires(tmp_path: Path) -> None:
    path = tmp_path / "fixme_model.py"
    path.write_text(MODEL_SOURCE, encoding="utf-8")

    def fires(module: ModuleType) -> int:
        net = module.Net()
        calls: list[int] = []
        handle = net.inner.register_forward_hook(lambda m, args, out: calls.append(1))
        try:
            net(torch.ones(2, 3))
        finally:
            handle.remove()
        return len(calls)

    assert fires(_load(path, "fixme_model")) == 0  # the bug the rule is about
    assert [f.code for f in lint(path, config=False)] == ["HS101"]
    assert _fix_in_place(path) == 1
    assert fires(_load(path, "fixme_model")) == 1


def test_fix_keeps_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "crlf.py"
    path.write_bytes(
        b"import torch\r\n\r\ndef f(model: torch.nn.Module, x):\r\n    return model.forward(x)  # c\r\n"
    )
    assert _fix_in_place_bytes(path) == 1
    assert (
        path.read_bytes()
        == b"import torch\r\n\r\ndef f(model: torch.nn.Module, x):\r\n    return model(x)  # c\r\n"
    )


def _fix_in_place_bytes(path: Path) -> int:
    applied = 0
    for file_fix in fix(lint_run(path, config=False)):
        with open(file_fix.path, "w", encoding="utf-8", newline="") as handle:
            handle.write(file_fix.fixed)
        applied += file_fix.applied
    return applied
