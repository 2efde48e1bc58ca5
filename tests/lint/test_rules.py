"""Every rule against fixture files whose expected codes are written inline."""

from __future__ import annotations

from pathlib import Path

import pytest

from hookscope.lint import all_rules, lint
from tests.lint.conftest import FIXTURES, expected_codes

PY_FIXTURES = ["forward_cases.py", "hooks_cases.py", "suppress_cases.py", "no_torch.py"]


EVERY_CODE = [rule.code for rule in all_rules()]  # the opt-in HS104 too


def found(path: Path | list[Path]) -> set[tuple[str, int, str]]:
    findings = lint(path, select=EVERY_CODE, config=False, jobs=1)
    return {(Path(f.path).name, f.line, f.code) for f in findings}


@pytest.mark.parametrize("name", PY_FIXTURES)
def test_python_fixture_matches_inline_expectations(name: str) -> None:
    path = FIXTURES / name
    expected = {(name, line, code) for line, code in expected_codes(path)}
    assert expected, "a fixture without expectations tests nothing"
    assert found(path) == expected


@pytest.mark.usefixtures("library_site")
def test_project_wide_class_index_resolves_across_files() -> None:
    project = FIXTURES / "project"
    expected = {
        (p.name, line, code) for p in project.glob("*.py") for line, code in expected_codes(p)
    }
    assert len(expected) == 97
    assert found(project) == expected


def test_single_file_without_its_base_classes_falls_back_to_the_heuristic() -> None:
    # Linted alone, use.py cannot see that Helper is a plain class: `helper` is then
    # judged by name (and the file imports torch), so it is flagged too.
    codes = found(FIXTURES / "project" / "use.py")
    assert ("use.py", 16, "HS101") in codes


def test_torchsharp_fixture_matches_inline_expectations() -> None:
    pytest.importorskip("tree_sitter_c_sharp")
    path = FIXTURES / "torchsharp_cases.cs"
    expected = {(path.name, line, code) for line, code in expected_codes(path)}
    assert expected == {(path.name, 13, "HS201"), (path.name, 14, "HS201")}
    assert found(path) == expected


def test_unparsable_file_is_reported_and_the_scan_goes_on(tmp_path: Path) -> None:
    # Only files that pass the pre-filter are parsed, so this one mentions .forward(.
    (tmp_path / "broken.py").write_text("def f(:\n    return m.forward(x)\n", encoding="utf-8")
    (tmp_path / "ok.py").write_text(
        "import torch\n\ndef f(model: torch.nn.Module, x):\n    return model.forward(x)\n",
        encoding="utf-8",
    )
    findings = lint(tmp_path, config=False)
    assert [(Path(f.path).name, f.code) for f in findings] == [
        ("broken.py", "HS000"),
        ("ok.py", "HS101"),
    ]
    assert "SyntaxError" in findings[0].message


def test_zoo_planted_bypass_is_suppressed_by_its_noqa() -> None:
    import hookscope.zoo

    assert lint(hookscope.zoo.__file__, config=False) == []
    assert [
        f.code for f in lint(hookscope.zoo.__file__, config=False, ignore=[]) if f.code == "HS101"
    ] == []


def test_findings_carry_positions_and_severity() -> None:
    findings = [f for f in lint(FIXTURES / "forward_cases.py", config=False) if f.code == "HS103"]
    assert len(findings) == 1
    finding = findings[0]
    line = (
        (FIXTURES / "forward_cases.py").read_text(encoding="utf-8").splitlines()[finding.line - 1]
    )
    assert line[finding.col - 1 : finding.end_col - 1] == "super(Wrapper, other).forward(1)"
    assert (finding.severity, finding.fixable) == ("error", False)
    assert "not `self`" in finding.message
