"""Files that used to crash, hang or be skipped by the linter (issue #14, lint robustness)."""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hookscope.cli.main import main
from hookscope.lint import lint

BYPASS = "import torch\n\nm = torch.nn.Linear(2, 2)\ny = m.forward(1)\n"


def _codes(path: Path, **options: object) -> list[tuple[str, int, str]]:
    return [(Path(f.path).name, f.line, f.code) for f in lint(path, config=False, **options)]  # type: ignore[arg-type]


def test_utf8_bom_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + BYPASS.encode())
    assert _codes(path) == [("bom.py", 4, "HS101")]


def test_fix_keeps_the_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + BYPASS.encode())
    assert main(["lint", "--no-config", "--fix", str(path)]) == 0
    assert path.read_bytes() == codecs.BOM_UTF8 + BYPASS.replace("m.forward(1)", "m(1)").encode()


def test_cr_only_line_endings_are_linted_and_fixed_in_place(tmp_path: Path) -> None:
    path = tmp_path / "mac.py"
    path.write_bytes(BYPASS.replace("\n", "\r").encode())
    assert _codes(path) == [("mac.py", 4, "HS101")]
    assert main(["lint", "--no-config", "--fix", str(path)]) == 0
    assert path.read_bytes() == BYPASS.replace("m.forward(1)", "m(1)").replace("\n", "\r").encode()


def test_fix_writes_a_latin1_file_in_latin1_and_fixes_the_other_files(tmp_path: Path) -> None:
    latin = tmp_path / "a_latin.py"
    text = "# -*- coding: latin-1 -*-\n# café\n" + BYPASS
    latin.write_bytes(text.encode("latin-1"))
    bad = tmp_path / "b_bad.py"  # declares latin-1... and is not decodable as UTF-8 either
    bad.write_bytes(b"# -*- coding: no-such-codec -*-\n\xff\n" + BYPASS.encode())
    plain = tmp_path / "c_plain.py"
    plain.write_text(BYPASS, encoding="utf-8")
    assert main(["lint", "--no-config", "--diff", str(tmp_path)]) == 1
    assert main(["lint", "--no-config", "--fix", str(tmp_path)]) == 1  # b_bad.py stays HS000
    assert latin.read_bytes() == text.replace("m.forward(1)", "m(1)").encode("latin-1")
    assert plain.read_text(encoding="utf-8") == BYPASS.replace("m.forward(1)", "m(1)")
    assert [code for _, _, code in _codes(tmp_path)] == ["HS000"]


def test_deep_nesting_is_hs000_for_that_file_only(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(
        "import torch\nx = m.forward(" + "a + " * 100_000 + "1)\n", encoding="utf-8"
    )
    (tmp_path / "ok.py").write_text(BYPASS, encoding="utf-8")
    found = lint(tmp_path, config=False)
    assert [(Path(f.path).name, f.code) for f in found] == [
        ("deep.py", "HS000"),
        ("ok.py", "HS101"),
    ]
    assert "nested" in found[0].message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_device_symlink_are_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "ok.py").write_text(BYPASS, encoding="utf-8")
    # In a subprocess with a timeout: reading the FIFO would block forever.
    code = f"from hookscope.lint import lint; print([f.code for f in lint({str(tmp_path)!r})])"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "['HS101', 'HS000', 'HS000']"  # ok.py, pipe.py, zero.py
    found = lint(tmp_path / "zero.py", config=False)
    assert [f.code for f in found] == ["HS000"] and "not a regular file" in found[0].message


def test_size_cap_is_hs000_and_configurable(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text(BYPASS + "#" * 2000 + "\n", encoding="utf-8")
    (finding,) = lint(path, config=False, max_file_size=1000)
    assert finding.code == "HS000" and "file too large" in finding.message
    assert [f.code for f in lint(path, config=False, max_file_size=10_000)] == ["HS101"]
    (tmp_path / "pyproject.toml").write_text(
        "[tool.hookscope.lint]\nmax-file-size = 1000\n", encoding="utf-8"
    )
    assert [f.code for f in lint(path)] == ["HS000"]
    assert main(["lint", "--no-config", "--max-file-size", "10000", str(path)]) == 1
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--max-file-size", "0", str(path)])
    assert exc.value.code == 2


@pytest.mark.parametrize("fork", [True, False])
def test_jobs_are_capped_at_cpus_and_files(tmp_path: Path, fork: bool) -> None:
    for i in range(70):
        (tmp_path / f"m{i}.py").write_text(BYPASS, encoding="utf-8")
    # Count the workers each phase starts (on a "2-CPU machine"): forked ones, or
    # the size of each process pool where fork is not used.
    code = (
        "import os, sys\n"
        "import concurrent.futures as futures\n"
        "from hookscope.lint import lint\nfrom hookscope.lint.engine import sharing\n"
        f"sharing.FORK = {fork}\n"
        "os.cpu_count = lambda: 2\n"
        "sizes = []\n"
        "Pool, fork = futures.ProcessPoolExecutor, os.fork\n"
        "futures.ProcessPoolExecutor = lambda n, **kw: (sizes.append(n), Pool(n, **kw))[1]\n"
        "if sharing.FORK:\n"
        "    os.fork = lambda: (sizes.append(1), fork())[1]\n"
        "findings = lint(sys.argv[1], jobs=40, config=False)\n"
        "print(sizes, len(findings))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    # The scan and the check: one forked worker each (this process is the second),
    # or pools of two workers.
    assert proc.stdout.strip() == ("[1, 1] 70" if fork else "[2, 2] 70")


def test_control_characters_in_file_names_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a\n::warning file=x::pwned\x1b[31m.py"
    path.write_text(BYPASS, encoding="utf-8")
    assert main(["lint", "--no-config", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1 and not any(
        line.startswith("::") for line in out.splitlines()
    )
    assert "\\n::warning" in out and "\x1b" not in out


def test_empty_path_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(BYPASS, encoding="utf-8")
    assert main(["lint", ""]) == 2
    assert "empty path" in capsys.readouterr().err


def test_a_single_file_run_does_not_import_multiprocessing(tmp_path: Path) -> None:
    # The pre-commit hook and editors lint one file at a time: start-up is most of it.
    path = tmp_path / "m.py"
    path.write_text(BYPASS, encoding="utf-8")
    code = (
        "import sys\n"
        "from hookscope.lint import lint\n"
        "found = lint(sys.argv[1], config=False)\n"
        "print(len(found), 'multiprocessing' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert proc.stdout.split() == ["1", "False"]
