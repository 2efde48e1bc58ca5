"""The documentation site builds with warnings as errors, has a page per lint rule, and renders."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tools.docs_hooks import cli_reference, rules_index

from hookscope.cli.main import build_parser
from hookscope.lint import all_rules
from tests.docs.blocks import ROOT
from tests.viz.chromium import find_chromium, load_page
from tests.viz.images import assert_not_blank, load_rgb

RULES = ROOT / "docs" / "lint" / "rules"


def test_every_registered_rule_has_a_page() -> None:
    codes = [rule.code for rule in all_rules()]
    assert codes, "the registry is empty"
    missing = [code for code in codes if not (RULES / f"{code}.md").is_file()]
    assert missing == [], f"write docs/lint/rules/<code>.md for {missing}"
    for code in codes:
        text = (RULES / f"{code}.md").read_text()
        assert text.startswith(f"# {code}"), code
        for section in ("## What it finds", "## Why it matters", "## Example", "## Fix"):
            assert section in text, f"{code}: no {section!r}"
        assert "## When it is not fixable" in text, code
    stale = sorted({p.stem for p in RULES.glob("HS*.md")} - set(codes))
    assert stale == [], f"pages of rules that no longer exist: {stale}"


def test_readme_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links its guides"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == [], f"README links to files that do not exist: {missing}"


def test_rules_index_lists_every_rule() -> None:
    index = rules_index()
    for rule in all_rules():
        assert f"[{rule.code}]({rule.code}.md)" in index
        assert f"`{rule.name}`" in index


def test_cli_reference_covers_every_subcommand_and_option() -> None:
    reference = cli_reference()
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    for name, sub in subparsers.choices.items():  # type: ignore[union-attr]
        assert f"## hookscope {name}\n" in reference
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in reference or f", {option}" in reference, option


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs not installed (pip install -e '.[dev]')")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings not installed")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def test_site_has_every_page(site: Path) -> None:
    for page in (ROOT / "docs").rglob("*.md"):
        built = site / page.relative_to(ROOT / "docs").with_suffix(".html")
        assert built.is_file(), built
    for code in (rule.code for rule in all_rules()):
        assert (site / "lint" / "rules" / f"{code}.html").is_file()
    cli = (site / "reference" / "cli.html").read_text()
    assert "hookscope lint" in cli and "--max-file-size" in cli
    api = (site / "reference" / "api.html").read_text()
    assert 'id="hookscope.monitor.Monitor"' in api


needs_chromium = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium not installed (`make browser` installs it with apt-get); browser test skipped",
)

PAGES = ("index.html", "guides/monitor.html", "lint/rules/HS101.html", "reference/cli.html")


@needs_chromium
@pytest.mark.parametrize("page", PAGES)
def test_pages_render_in_headless_chromium(site: Path, page: str, tmp_path: Path) -> None:
    result = load_page(
        site / page,
        evaluate={
            "title": "document.title",
            "h1": "document.querySelector('article h1')?.textContent ?? ''",
            "nav": "document.querySelectorAll('nav a').length",
            "header": "getComputedStyle(document.querySelector('.md-header')).position",
        },
        width=1280,
        height=900,
    )
    assert result.errors == [], result.errors
    assert "hookscope" in result.values["title"]
    assert result.values["h1"].strip()
    assert result.values["nav"] > 10
    assert result.values["header"] == "sticky"  # the theme's stylesheet applied
    external = [u for u in result.requests if not u.startswith(("file:", "data:", "blob:"))]
    assert external == [], "the site must not need the network"
    (tmp_path / "shot.png").write_bytes(result.screenshot)
    pixels = load_rgb(tmp_path / "shot.png")
    assert pixels.shape == (900, 1280, 3)
    assert_not_blank(pixels, min_colours=20)
