"""Files given to the linter as they are on disk: links fixed through, binary sources refused."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from hookscope.cli.main import main
from hookscope.lint import lint

BYPASS = "import torch\n\nm = torch.nn.Linear(2, 2)\ny = m.forward(1)\n"
FIXED = BYPASS.replace("m.forward(1)", "m(1)")
BYPASS_CS = (
    "using static TorchSharp.torch.nn;\n"
    "class A {\n"
    "    void Run() {\n"
    "        var lin = Linear(2, 2);\n"
    "        var y = lin.forward(x);\n"
    "    }\n"
    "}\n"
)

needs_links = pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")


def _codes(path: Path, **options: object) -> list[tuple[str, str]]:
    return [(Path(f.path).name, f.code) for f in lint(path, config=False, **options)]  # type: ignore[arg-type]


@needs_links
def test_fix_on_a_link_fixes_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "real" / "model.py"
    target.parent.mkdir()
    target.write_text(BYPASS, encoding="utf-8")
    target.chmod(0o640)
    link = tmp_path / "work" / "model.py"
    link.parent.mkdir()
    link.symlink_to(target)
    assert main(["lint", "--no-config", "--fix", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == FIXED
    assert (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.py"]  # no temporary left
    assert sorted(p.name for p in link.parent.iterdir()) == ["model.py"]


@needs_links
def test_fix_on_a_relative_link_chain_in_one_tree_fixes_the_file_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "model.py").write_text(BYPASS, encoding="utf-8")
    (tmp_path / "alias.py").symlink_to("model.py")
    (tmp_path / "alias2.py").symlink_to("alias.py")
    assert main(["lint", "--no-config", "--fix", str(tmp_path)]) == 0
    assert (tmp_path / "alias.py").is_symlink() and (tmp_path / "alias2.py").is_symlink()
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == FIXED
    assert "fixed 1 finding(s)" in capsys.readouterr().err


@needs_links
def test_fix_through_a_link_to_a_read_only_folder_says_why_and_keeps_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "model.py"
    target.write_text(BYPASS, encoding="utf-8")
    link = tmp_path / "model.py"
    link.symlink_to(target)
    folder.chmod(0o500)
    try:
        assert main(["lint", "--no-config", "--fix", str(link)]) == 1
    finally:
        folder.chmod(0o700)
    assert "cannot fix" in capsys.readouterr().err
    assert link.is_symlink() and target.read_text(encoding="utf-8") == BYPASS


@pytest.mark.parametrize("suffix", [".py", ".cs"])
@pytest.mark.parametrize(
    "data",
    [
        bytes(random.Random(7).randrange(256) for _ in range(4096)),
        b"\x00" * 64 + b" m.forward(x) " + b"\x00" * 64,
        b"\xff\xfe\x00\x00 lin.forward(x)",
    ],
    ids=["random", "nul-with-forward", "bad-utf8"],
)
def test_a_binary_source_file_is_hs000(tmp_path: Path, suffix: str, data: bytes) -> None:
    path = tmp_path / f"blob{suffix}"
    path.write_bytes(data)
    (tmp_path / f"ok{suffix}").write_text(BYPASS if suffix == ".py" else BYPASS_CS)
    codes = _codes(tmp_path)
    assert ("blob" + suffix, "HS000") in codes
    assert [c for n, c in codes if n.startswith("ok")] == ["HS101" if suffix == ".py" else "HS201"]
