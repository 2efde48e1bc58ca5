"""mkdocs hooks: pages generated from the code at build time, never hand-copied.

- ``reference/cli.md``: every ``hookscope`` subcommand, from the argparse parsers
  that the CLI itself runs (`hookscope.cli.main.build_parser`).
- ``lint/rules/index.md``: the table of lint rules, from the rule registry
  (`hookscope.lint.all_rules`); each row links to the rule's own page.

Used by ``mkdocs.yml`` (``hooks:``) and by the docs tests, which check that every
registered rule has a page and every subcommand a section.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

GENERATED = ("reference/cli.md", "lint/rules/index.md")


def _markdown(text: str) -> str:
    """Docstring text (reST double backticks) as Markdown."""
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    return re.sub(r"::$", ":", text, flags=re.MULTILINE).strip()  # reST "Examples::"


def _cell(text: str) -> str:
    return _markdown(text).replace("|", r"\|").replace("\n", " ")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | meaning | default |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or (
                    "{" + ",".join(map(str, action.choices)) + "}"
                    if action.choices
                    else action.dest.upper()
                )
                name += f" {metavar}"
        else:
            name = str(action.metavar or action.dest)
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) else f"`{default}`"
        rows.append(f"| `{name}` | {_cell(action.help or '')} | {shown} |")
    return rows


def cli_reference() -> str:
    """Markdown reference of every ``hookscope`` subcommand, from its argparse parser."""
    from hookscope.cli.main import build_parser

    root = build_parser()
    lines = [
        "# Command line reference",
        "",
        "Generated from the `hookscope` argument parsers when the site is built;",
        "`hookscope COMMAND --help` prints the same. Exit codes: 0 ok, 1 findings",
        "(where a command has findings), 2 a usage or input error (one line, no",
        "traceback), 130 interrupted.",
        "",
    ]
    for name, parser in _subparsers(root).items():
        lines += [f"## hookscope {name}", "", "```text", parser.format_usage().strip(), "```", ""]
        if parser.description:
            lines += [_markdown(parser.description), ""]
        lines += [*_option_rows(parser), ""]
    return "\n".join(lines)


def rules_index() -> str:
    """Markdown table of every lint rule in the registry, each linked to its page."""
    from hookscope.lint import all_rules

    lines = [
        "# Lint rules",
        "",
        "Generated from the rule registry when the site is built. Opt-in rules run",
        "only when their full code is selected (`--select HS1,HS104`).",
        "",
        "| code | name | severity | autofix | runs by default | language |",
        "|---|---|---|---|---|---|",
    ]
    for rule in all_rules():
        lines.append(
            f"| [{rule.code}]({rule.code}.md) | `{rule.name}` | {rule.severity} | "
            f"{'yes' if rule.fixable else 'no'} | {'yes' if rule.default else 'opt-in'} | "
            f"{rule.language} |"
        )
    return "\n".join(lines) + "\n"


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the site."""
    from mkdocs.structure.files import File

    for uri, content in zip(GENERATED, (cli_reference(), rules_index()), strict=True):
        files.append(File.generated(config, uri, content=content))
    return files
