"""Code blocks of the README and the docs, read so the tests can run them.

Fenced blocks are run by language: ``python`` blocks as programs (in-process, in a
temp dir), ``bash`` blocks line by line (in a temp dir that holds
``examples/train.py`` and ``examples/model.py`` as ``train.py`` and ``model.py``):
a plain ``hookscope ARGS`` line through the CLI's ``main`` in-process, any other
line, and every line of a slow block, in bash.
Other languages (``text``, ``json``, ``toml``, ``yaml``, ``csharp``) are not run.

An HTML comment on the line right above a fence changes that:

- ``<!-- docs-test: skip REASON -->``: not run (the reason is required).
- ``<!-- docs-test: continue -->``: a python block joined to the python block
  before it: both run as one program, in order.
- ``<!-- docs-test: slow -->``: run, marked ``slow``.
- ``<!-- docs-test: file NAME -->``: not run; written to ``NAME`` in the temp dir
  of every later block of the same page.

A ``--8<-- "path"`` line in a block (pymdownx.snippets, as the site renders it)
stands for the file at that path of the repository.

In a bash block, a line ending in ``# exit N`` must exit with ``N``; every other
command must exit 0. Lines starting with ``#`` (shown output) are not run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ("python", "bash")
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w+-]*)\s*$")
_MARK = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>\w+)\s*(?P<arg>.*?)\s*-->\s*$")
_KINDS = ("skip", "continue", "slow", "file")
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"$')


@dataclass
class Block:
    """One fenced code block."""

    page: str
    line: int
    lang: str
    code: str
    mark: str = ""
    arg: str = ""
    joined: list[Block] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """The README and every Markdown page of the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, with the marker above it."""
    page = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, fence = opened["indent"], opened["fence"]
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = [_expand(line[len(indent) :]) for line in lines[i + 1 : end]]
        mark = _MARK.match(lines[i - 1]) if i else None
        kind, arg = (mark["kind"], mark["arg"]) if mark else ("", "")
        if kind and kind not in _KINDS:
            raise ValueError(f"{page}:{i}: unknown docs-test marker {kind!r}")
        if kind == "skip" and not arg:
            raise ValueError(f"{page}:{i}: docs-test: skip needs a reason")
        blocks.append(Block(page, i + 1, opened["lang"], "\n".join(body) + "\n", kind, arg))
        i = end + 1
    return blocks


def _expand(line: str) -> str:
    """A ``--8<-- "path"`` line (pymdownx.snippets) as the file it includes."""
    included = _SNIPPET.match(line.strip())
    return (ROOT / included["path"]).read_text(encoding="utf-8").rstrip("\n") if included else line


def runnable(blocks: list[Block]) -> list[Block]:
    """The blocks to run: continuations folded into the block they continue."""
    chosen: list[Block] = []
    last_python: Block | None = None
    for block in blocks:
        if block.mark == "continue":
            if last_python is None or block.lang != "python":
                raise ValueError(f"{block.id}: `continue` needs a python block before it")
            last_python.joined.append(block)
            continue
        if block.lang not in RUN or block.mark in ("skip", "file"):
            continue
        chosen.append(block)
        if block.lang == "python":
            last_python = block
    return chosen


def files_before(blocks: list[Block], block: Block) -> dict[str, str]:
    """The ``file`` blocks of the page above ``block``: name -> content."""
    return {b.arg: b.code for b in blocks if b.mark == "file" and b.line < block.line}


def program(block: Block) -> str:
    """The python source of a block and the blocks joined to it."""
    return "".join(b.code for b in [block, *block.joined])


def commands(block: Block) -> list[tuple[int, str, int]]:
    """The commands of a bash block: (line number, command, expected exit code)."""
    found = []
    for n, line in enumerate(block.code.splitlines(), start=block.line + 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            expected = re.search(r"#\s*exit (\d+)\s*$", stripped)
            found.append((n, stripped, int(expected[1]) if expected else 0))
    return found


def in_process(command: str) -> list[str] | None:
    """``hookscope ARGS`` as its arguments when no shell is needed to run it, else None."""
    if not command.startswith("hookscope ") or any(c in command for c in "|;&<>`$"):
        return None
    return shlex.split(command, comments=True)[1:]


def shell_script(block: Block) -> str:
    """A bash script that runs each command of a block and checks its exit code."""
    out = [
        "set -u",
        'check() { if [ "$1" != "$2" ]; then',
        '  echo "line $3 exited $1, expected $2" >&2; exit 99; fi; }',
    ]
    for n, line in enumerate(block.code.splitlines(), start=block.line + 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        expected = re.search(r"#\s*exit (\d+)\s*$", stripped)
        out.append(line)
        out.append(f"check $? {expected[1] if expected else 0} {n}")
    return "\n".join(out) + "\n"
