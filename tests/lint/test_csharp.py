"""HS201/HS202: C# receivers resolved by declared types and the project class hierarchy."""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pytest

from hookscope.lint import fix, lint, lint_run
from tests.lint.conftest import FIXTURES, expected_codes

pytest.importorskip("tree_sitter_c_sharp")

PROJECT = FIXTURES / "csharp_project"


def found(
    path: Path | list[Path], select: tuple[str, ...] = ("HS201", "HS202")
) -> set[tuple[str, int, str]]:
    findings = lint(path, config=False, jobs=1, select=list(select))
    return {(Path(f.path).name, f.line, f.code) for f in findings}


def expected(*paths: Path) -> set[tuple[str, int, str]]:
    return {(p.name, line, code) for p in paths for line, code in expected_codes(p)}


def test_project_matches_inline_expectations() -> None:
    files = sorted(PROJECT.glob("*.cs"))
    want = expected(*files)
    assert {code for _, _, code in want} == {"HS201", "HS202"}
    assert found(PROJECT) == want


def test_receivers_that_are_not_modules_give_no_finding() -> None:
    # stage (a project class with forward), SubStage, Dictionary<string, Stage> values,
    # distributions transforms, exported programs, `is Stage st`: all resolved, none modules.
    lines = {line for _, line, _ in found(PROJECT)}
    source = (PROJECT / "Model.cs").read_text(encoding="utf-8").splitlines()
    for receiver in ("stage", "s", "t", 'stages["a"]', "made", "plain", "other", "exported", "st"):
        line = next(i for i, text in enumerate(source, 1) if f" {receiver}.forward(" in text)
        assert line not in lines, receiver


def test_guesses_are_never_fixable_and_off_by_default() -> None:
    findings = lint(PROJECT, config=False, jobs=1, select=["HS201", "HS202"])
    guesses = [f for f in findings if f.code == "HS202"]
    assert guesses and all(not f.fixable and not f.edits for f in guesses)
    assert all(f.confidence == "guess" for f in guesses)
    thing = next(f for f in guesses if f.message.startswith("`thing."))
    assert "(parameter `thing`: Thing at line 37)" in thing.message  # Thing: outside the tree
    confident = [f for f in findings if f.code == "HS201"]
    assert all(f.fixable and f.edits and f.confidence == "resolved" for f in confident)
    assert all(f.resolution and f"(resolved: {f.resolution})" in f.message for f in confident)
    default = lint(PROJECT, config=False, jobs=1)
    assert {f.code for f in default} == {"HS201"}
    assert len(default) == len(findings) - len(guesses)


def test_resolution_is_reported_in_the_message() -> None:
    by_line = {f.line: f.message for f in lint(PROJECT, config=False, jobs=1)}
    assert "(resolved: member Model.fc: Module<Tensor, Tensor>)" in by_line[24]
    assert "(resolved: local `lin`: Linear at line 43)" in by_line[44]
    assert "(resolved: foreach `b`: Block at line 28)" in by_line[28]


def test_each_file_alone_gives_the_findings_of_the_folder_run() -> None:
    # A single file is linted against the index of its project (all its .cs files).
    each = set().union(*(found(p) for p in sorted(PROJECT.glob("*.cs"))))
    assert each == found(PROJECT)


def test_a_file_outside_any_project_guesses_what_other_files_declare(tmp_path: Path) -> None:
    # Without Blocks.cs, Block/DeepBlock/Stage are unknown: their calls become HS202
    # guesses (never fixed); what the file itself declares is still resolved.
    shutil.copy(PROJECT / "Model.cs", tmp_path / "Model.cs")
    alone = found(tmp_path / "Model.cs")
    assert ("Model.cs", 24, "HS201") in alone  # Module<Tensor, Tensor> field
    assert ("Model.cs", 44, "HS201") in alone  # nn.Linear(...)
    assert ("Model.cs", 67, "HS201") in alone  # torch.jit.load
    assert ("Model.cs", 25, "HS202") in alone  # DeepBlock, declared in Blocks.cs
    assert ("Model.cs", 26, "HS202") in alone  # Stage, declared in Blocks.cs
    assert not any(line == 69 for _, line, _ in alone)  # exported program: known


def test_fix_rewrites_only_resolved_modules(tmp_path: Path) -> None:
    shutil.copytree(PROJECT, tmp_path / "p")
    run = lint_run(tmp_path / "p", config=False, jobs=1, select=["HS201", "HS202"])
    fixed = {Path(f.path).name: f.fixed for f in fix(run)}
    text = fixed["Model.cs"]
    assert "x = fc.call(x); // HS201" in text
    assert "x = maybe?.call(x); // HS201" in text
    assert "x = thing.forward(x); // HS202" in text  # a guess is left alone
    assert "x = stage.forward(x);" in text and "x = t.forward(x);" in text
    assert "Blocks.cs" not in fixed  # `=> x` in Block.forward is a declaration, not a call


@pytest.mark.parametrize(
    ("snippet", "code"),
    [
        ("Module<Tensor, Tensor> m = null;\n        m.forward(x);", "HS201"),
        ("var m = new Linear(4, 4);\n        m.forward(x);", "HS201"),
        ("var m = torch.nn.Conv2d(1, 1, 3);\n        m.forward(x);", "HS201"),
        ("IModule<Tensor, Tensor> m = Get();\n        m.forward(x);", "HS201"),
        (
            "List<(string, Linear)> named = Get();\n        foreach (var (n, m) in named) m.forward(x);",
            "HS201",
        ),
        ('var m = torch.jit.load<Tensor, Tensor>("p");\n        m.forward(x);', "HS201"),
        ('var m = torch.jit.load<Tensor>("p");\n        m.forward(x);', ""),  # no hooks
        ("var m = new Plain();\n        m.forward(x);", ""),  # Plain : Module, no hooks
        ("ModuleList<Linear> ms = Get();\n        ms[0].forward(x);", "HS201"),
        ("foreach (Module<Tensor, Tensor> m in items) m.forward(x);", "HS201"),
        ("var ms = new List<Linear>();\n        ms[0].forward(x);", "HS201"),
        ('var m = torch.export.load("p");\n        m.forward(x);', ""),
        ("torch.distributions.transforms.Transform t = T();\n        t.forward(x);", ""),
        ("var t = new ExpTransform();\n        t.forward(x);", ""),
        ("Tensor t = x;\n        t.forward(x);", ""),
        ("var m = Make();\n        m.forward(x);", "HS202"),
        ("ExternalThing m = Make();\n        m.forward(x);", "HS202"),
    ],
)
def test_one_resolution_rule_per_snippet(tmp_path: Path, snippet: str, code: str) -> None:
    path = tmp_path / "Snippet.cs"
    path.write_text(
        "using static TorchSharp.torch;\nclass Net : Module<Tensor, Tensor>\n{\n"
        "    public override Tensor forward(Tensor x)\n    {\n"
        f"        {snippet}\n        return x;\n    }}\n}}\n"
        "class Plain : Module { public Tensor forward(Tensor x) => x; }\n",
        encoding="utf-8",
    )
    codes = {f.code for f in lint(path, config=False, jobs=1, select=["HS201", "HS202"])}
    assert codes == ({code} if code else set())


def test_example_script_fixes_only_the_resolved_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    example = Path(__file__).resolve().parents[2] / "examples" / "lint_torchsharp.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert "Net.cs:14:43: HS201 [*]" in out and "Net.cs:20:64: HS202 " in out
    assert "`external.forward(...)` may skip hooks" in out
    assert "after --fix: ['HS202@20']" in out
    fixed = (tmp_path / "runs" / "lint_torchsharp" / "Net.cs").read_text(encoding="utf-8")
    assert "x = block.call(x);" in fixed and "external.forward(x)" in fixed


def test_class_type_parameters_resolve_through_their_constraints(tmp_path: Path) -> None:
    path = tmp_path / "Wrapper.cs"
    path.write_text(
        "class Wrapper<T, U> : Module<Tensor, Tensor>\n"
        "    where T : nn.Module<Tensor, Tensor>\n    where U : Stage\n{\n"
        "    private readonly T inner;\n    private U stage;\n"
        "    public override Tensor forward(Tensor x)\n    {\n"
        "        x = this.inner.forward(x);\n        x = inner.forward(x);\n"
        "        return stage.forward(x);\n    }\n}\n"
        "class Stage { public Tensor forward(Tensor x) => x; }\n",
        encoding="utf-8",
    )
    findings = lint(path, config=False, jobs=1, select=["HS201", "HS202"])
    assert [(f.line, f.code) for f in findings] == [(9, "HS201"), (10, "HS201")]
