"""The runner's cheap pre-filter and file discovery, on real files."""

from __future__ import annotations

import fnmatch
import gc
from pathlib import Path

import pytest

from hookscope.lint import discover, lint_run
from hookscope.lint.python.frontend import calls_forward


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (b"m.forward(x)", True),
        (b"m . forward (x)", True),
        (b"m.\\\n    forward(x)", True),  # line continuation between "." and the name
        (b"super().forward(x)", False),
        (b"super() . forward(x)", False),
        (b"super().forward(x)\nm.forward(y)", True),
        (b"forward(x)", False),  # a plain function call
        (b"m.xforward(x)", False),
        (b"def forward(self, x):", False),
    ],
)
def test_forward_prefilter(source: bytes, expected: bool) -> None:
    assert calls_forward(source) is expected
    # Searched from the last "." before the first "forward" (the scan knows where it is).
    assert calls_forward(b"a.b = 1\n" + source, source.find(b"forward") + 8) is expected


def test_exclude_globs_match_like_fnmatch(tmp_path: Path) -> None:
    rels = ["a.py", "b1.py", "zz.py", "sub/e1.py", "sub/f.py", "pkg.egg-info/g.py", "deep/sub/h.py"]
    for rel in rels:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    patterns = ["sub/e*.py", "[x-z]*.py", "b?.py"]
    found = {Path(p).relative_to(tmp_path).as_posix() for p in discover([tmp_path], patterns)}
    # The same rule spelled with fnmatch: a glob matches a file's name, its path, or
    # one of its folders' names or paths ("*.egg-info" is a default exclude).
    everything = [*patterns, "*.egg-info"]

    def kept(rel: str) -> bool:
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return not any(fnmatch.fnmatch(name, p) for name in [*parts, *prefixes] for p in everything)

    assert found == {rel for rel in rels if kept(rel)} == {"a.py", "sub/f.py", "deep/sub/h.py"}


def test_what_a_run_keeps_is_not_left_to_the_young_collections(tmp_path: Path) -> None:
    # The collector is paused during a run; what the run keeps (its class index) must
    # then sit in the oldest generation, or the first young collection after the run
    # walks all of it (tens of milliseconds on a big tree).
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(f"class Net{i}(Base):\n    pass\n", encoding="utf-8")
    assert gc.isenabled()
    run = lint_run([tmp_path], jobs=1, config=False)
    assert gc.isenabled()
    assert "Net0" in run.index
    oldest = {id(obj) for obj in gc.get_objects(generation=2)}
    assert id(run.index) in oldest and id(run.index.defs["Net0"]) in oldest
