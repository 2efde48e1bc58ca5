"""Selection, suppression, output formats, configuration, parallel runs, the flake8 plugin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hookscope.errors import LintError, UsageError
from hookscope.lint import all_rules, discover, lint, select_codes
from hookscope.lint.engine.findings import line_codes
from hookscope.lint.engine.formats import render, to_sarif
from tests.lint.conftest import FIXTURES, expected_codes

ALL_CODES = {
    "HS000",
    "HS101",
    "HS102",
    "HS103",
    "HS104",
    "HS111",
    "HS112",
    "HS113",
    "HS114",
    "HS201",
    "HS202",
}


def test_registry_has_one_class_per_code_with_message_data() -> None:
    rules = all_rules()
    assert {r.code for r in rules} == ALL_CODES
    assert all(r.message and r.name and r.severity in ("error", "warning") for r in rules)


def test_select_and_ignore_match_by_prefix() -> None:
    assert select_codes(["HS11"]) == {"HS111", "HS112", "HS113", "HS114"}
    assert select_codes(["HS1"], ["HS11", "HS103"]) == {"HS101", "HS102"}
    assert select_codes() == ALL_CODES - {"HS104", "HS202"}
    assert select_codes(["HS2"]) == {"HS201"}  # a guess is selected by its full code only
    assert select_codes(["HS2", "HS202"]) == {"HS201", "HS202"}
    with pytest.raises(UsageError, match="'HS9'"):
        select_codes(["HS9"])


def test_guesses_are_opt_in_and_selected_only_by_their_full_code() -> None:
    assert "HS104" not in select_codes(["HS1"]) | select_codes(["HS10"]) | select_codes()
    assert select_codes(["HS1", "HS104"]) == select_codes(["HS1"]) | {"HS104"}
    assert select_codes(["hs104", "HS0"], ["HS10"]) == {"HS000"}  # ignore matches by prefix


def test_lint_respects_select() -> None:
    codes = {f.code for f in lint(FIXTURES / "hooks_cases.py", select=["HS113"], config=False)}
    assert codes == {"HS113"}


@pytest.mark.parametrize(
    ("line", "codes"),
    [
        ("x  # noqa", set()),
        ("x  # noqa: HS101", {"HS101"}),
        ("x  # noqa:HS101,HS102", {"HS101", "HS102"}),
        ("x  # noqa: HS101 -- planted on purpose", {"HS101"}),
        ("x  # hookscope: ignore[HS111, HS112]", {"HS111", "HS112"}),
        ("x  # hookscope: ignore", set()),
        ("x  // noqa: HS201", {"HS201"}),
        ("x  # a normal comment", None),
    ],
)
def test_line_codes(line: str, codes: set[str] | None) -> None:
    assert line_codes(line) == codes


def test_json_objects_have_the_documented_keys() -> None:
    findings = lint(FIXTURES / "forward_cases.py", config=False)
    data = json.loads(render(findings, "json", all_rules()))
    assert len(data) == len(findings) > 0
    keys = {"path", "line", "col", "end_line", "end_col", "code", "message", "severity", "fixable"}
    keys |= {"confidence", "resolution"}
    assert all(set(item) == keys for item in data)
    assert all(isinstance(item["line"], int) and item["end_line"] >= item["line"] for item in data)


def test_sarif_shape() -> None:
    findings = lint(FIXTURES / "forward_cases.py", config=False)
    log = json.loads(json.dumps(to_sarif(findings, all_rules())))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(ALL_CODES)
    assert all(
        r["shortDescription"]["text"] and r["defaultConfiguration"]["level"] in ("error", "warning")
        for r in rules
    )
    assert len(run["results"]) == len(findings)
    for result, finding in zip(run["results"], findings, strict=True):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == finding.code
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (finding.line, finding.col)
        assert (region["endLine"], region["endColumn"]) == (finding.end_line, finding.end_col)


def test_github_annotations() -> None:
    findings = lint(FIXTURES / "forward_cases.py", select=["HS103"], config=False)
    (line,) = render(findings, "github", all_rules()).splitlines()
    assert line.startswith(f"::error file={findings[0].path},line={findings[0].line},col=")
    assert "title=HS103::HS103 `super(Wrapper, other).forward(...)`" in line


def test_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="'xml'"):
        render([], "xml", all_rules())


def test_pyproject_settings_apply_and_arguments_override(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.hookscope.lint]\nselect = ["HS11"]\nexclude = ["skip_*"]\n', encoding="utf-8"
    )
    source = (FIXTURES / "hooks_cases.py").read_text(encoding="utf-8")
    (tmp_path / "a.py").write_text(source, encoding="utf-8")
    (tmp_path / "skip_me.py").write_text(source, encoding="utf-8")
    codes = {(Path(f.path).name, f.code) for f in lint(tmp_path)}
    assert codes == {("a.py", c) for c in ("HS111", "HS112", "HS113", "HS114")}
    assert {f.code for f in lint(tmp_path, select=["HS113"])} == {"HS113"}
    assert len(lint(tmp_path, config=False)) > len(lint(tmp_path))


def test_bad_pyproject_settings_show_the_bad_value(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.hookscope.lint]\nselec = []\n", encoding="utf-8"
    )
    with pytest.raises(LintError, match="selec"):
        lint(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.hookscope.lint]\njobs = -1\n", encoding="utf-8")
    with pytest.raises(LintError, match="-1"):
        lint(tmp_path)


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LintError, match="nope"):
        lint(tmp_path / "nope", config=False)


def test_discover_skips_default_and_given_excludes(tmp_path: Path) -> None:
    for rel in ("a.py", "b.cs", "c.txt", ".venv/x.py", "gen/d.py", "sub/e.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    names = {Path(p).relative_to(tmp_path).as_posix() for p in discover([tmp_path], ["gen"])}
    assert names == {"a.py", "b.cs", "sub/e.py"}


def test_parallel_run_equals_serial_run(tmp_path: Path) -> None:
    source = (FIXTURES / "forward_cases.py").read_text(encoding="utf-8")
    for i in range(70):  # above the size where processes are used
        (tmp_path / f"m{i:02d}.py").write_text(
            source if i % 10 == 0 else "x = 1\n", encoding="utf-8"
        )
    serial = lint(tmp_path, jobs=1, config=False)
    confident = [e for e in expected_codes(FIXTURES / "forward_cases.py") if e[1] != "HS104"]
    assert len(serial) == 7 * len(confident)
    assert lint(tmp_path, jobs=2, config=False) == serial


def test_progress_callback_sees_every_file(tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text("import torch\nm.forward(1)\n", encoding="utf-8")
    seen: list[tuple[str, int, int]] = []
    lint(
        tmp_path,
        config=False,
        progress=lambda phase, done, total: seen.append((phase, done, total)),
    )
    assert ("index", 3, 3) in seen and ("check", 3, 3) in seen


def test_flake8_plugin_runs_for_real() -> None:
    paths = [FIXTURES / "forward_cases.py", FIXTURES / "suppress_cases.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=HS", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    found: dict[str, set[tuple[int, str]]] = {p.name: set() for p in paths}
    for line in proc.stdout.splitlines():
        path, lineno, _col, rest = line.split(":", 3)
        found[Path(path).name].add((int(lineno), rest.split()[0]))
    # The plugin runs the default rules: the opt-in HS104 guesses are not among them.
    assert found == {p.name: {e for e in expected_codes(p) if e[1] != "HS104"} for p in paths}
