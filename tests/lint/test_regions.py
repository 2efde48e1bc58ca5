"""Masked parsing gives the same findings as parsing the whole file."""

from __future__ import annotations

import ast

import pytest

from hookscope.lint import select_codes
from hookscope.lint.engine.index import ClassIndex, merge
from hookscope.lint.python import frontend
from hookscope.lint.python.index.classes import scan_classes
from hookscope.lint.python.parse.pyfile import PyFile
from hookscope.lint.python.parse.regions import _statement_starts, mask
from hookscope.lint.python.rules.analysis import Analysis, WholeFileNeeded

FILLER = '''

class Filler{i}(nn.Module):
    """Docstring with a line at the class's indentation:
    def not_a_method(self): ...
    """

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    @staticmethod
    def helper(x):
        return x + {i}

    def forward(self, x):
        return super().forward(x)
'''

HOT = """

class Hot(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Filler0()

    def unrelated(self):
        return 1

    @torch.no_grad()
    def predict(self, x):
        return self.forward(self.inner.forward(x))  # HS101 and HS102


def unknown(model, x):
    return model.forward(x)
"""


def _source() -> str:
    return (
        "import torch\nfrom torch import nn\n"
        + "".join(FILLER.format(i=i) for i in range(30))
        + HOT
    )


def test_mask_keeps_line_numbers_and_drops_uninteresting_members() -> None:
    text = _source()
    masked = mask(text)
    assert masked is not None
    lines, kept = text.split("\n"), masked.split("\n")
    assert len(kept) == len(lines)
    assert all(k in ("", line) for k, line in zip(kept, lines, strict=True))
    tree = ast.parse(masked)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert {"__init__", "predict", "unknown"} <= names  # the Filler classes are all dropped
    assert "helper" not in names and "unrelated" not in names
    assert "    @torch.no_grad()" in kept  # a decorator stays with its method
    assert sum(1 for k in kept if k) < 0.9 * len(lines)


def test_masked_analysis_equals_full_analysis() -> None:
    text = _source()
    index = merge(scan_classes(text.encode()))
    codes = select_codes(["HS", "HS104"])
    masked = frontend.analyze_text("m.py", text, index, codes)
    full = frontend.check(Analysis.of(PyFile.parse("m.py", text), index), codes)
    assert masked == full
    line = (
        text.split("\n").index(
            "        return self.forward(self.inner.forward(x))  # HS101 and HS102"
        )
        + 1
    )
    last = len(text.split("\n")) - 1
    assert [(f.code, f.line) for f in full] == [("HS102", line), ("HS101", line), ("HS104", last)]


def test_unsure_rules_ask_for_the_whole_file() -> None:
    text = _source()
    masked = mask(text)
    assert masked is not None
    analysis = Analysis.of(
        PyFile.from_tree("m.py", text, ast.parse(masked)), ClassIndex(), partial=True
    )
    codes = select_codes(["HS101"])
    assert frontend.check(analysis, codes) == []  # the rules stopped: their findings go
    assert analysis.needs_full  # `model` in unknown() cannot be resolved from the mask
    with pytest.raises(WholeFileNeeded):
        analysis.unsure()
    whole = Analysis.of(PyFile.parse("m.py", text), ClassIndex())
    whole.unsure()  # nothing more to parse
    assert not whole.needs_full
    assert frontend.check(whole, codes)


def test_small_or_all_interesting_files_are_not_masked() -> None:
    assert mask("import torch\nm.forward(1)\n") is None
    assert mask("x = 1\n") is None


def test_a_decorated_statement_ends_where_the_next_statement_starts() -> None:
    # Once, every statement after a decorated one was taken for part of it, so files
    # with a decorated function near the top were never masked.
    lines = ["@dec", "@dec2(1)", "def a():", "    pass", "", "def b():", "    pass", "x = 1"]
    assert _statement_starts(lines, 0, len(lines), "") == [0, 5, 7]
    text = "import torch\n\n@dec\ndef a():\n    pass\n" + "".join(
        f"\n\ndef f{i}(x):\n    return x + {i}\n" for i in range(20)
    )
    masked = mask(text + "\n\ndef g(m):\n    return m.forward(1)\n")
    assert masked is not None and "def f3(x):" not in masked and "def g(m):" in masked
