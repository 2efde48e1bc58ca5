"""Small HTML building blocks for the self-contained report.

Everything is escaped with ``html.escape``; images are inlined as base64
``data:`` URIs; the stylesheet is inline. The page loads no external URL and
runs no script.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from hookscope._html import MAX_TABLE_ROWS, absent, esc, fmt, key_values, table

__all__ = [
    "CSS",
    "MAX_TABLE_ROWS",
    "absent",
    "esc",
    "fmt",
    "image",
    "key_values",
    "mapping",
    "page",
    "section",
    "table",
]

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1b1f24;
       background: #f6f8fa; }
header { background: #24292f; color: #fff; padding: 16px 32px; }
header h1 { margin: 0; font-size: 22px; }
header p { margin: 4px 0 0; color: #c9d1d9; font-size: 13px; }
nav { padding: 8px 32px; background: #fff; border-bottom: 1px solid #d0d7de; font-size: 13px; }
nav a { margin-right: 14px; color: #0969da; text-decoration: none; }
main { padding: 8px 32px 32px; }
section { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; margin: 16px 0;
          padding: 8px 20px 16px; }
h2 { font-size: 18px; border-bottom: 1px solid #d8dee4; padding-bottom: 6px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eaeef2; margin: 6px 0; }
.absent { color: #6e7781; font-style: italic; }
.bad { color: #cf222e; font-weight: 600; }
.good { color: #1a7f37; font-weight: 600; }
.grid { display: flex; flex-wrap: wrap; gap: 12px; }
.grid figure { margin: 0; }
.grid img { max-width: 560px; }
figcaption { font-size: 12px; color: #57606a; }
code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; }
"""


def mapping(data: Mapping[str, Any]) -> str:
    """Any JSON object: scalars as a key/value table, lists of objects as tables."""
    scalars = [(k, v) for k, v in data.items() if not _is_records(v) and not isinstance(v, Mapping)]
    parts = [key_values(scalars)] if scalars else []
    for key, value in data.items():
        if _is_records(value):
            parts.append(f"<h3>{esc(key)} ({len(value)})</h3>{table(value)}")
        elif isinstance(value, Mapping):
            parts.append(f"<h3>{esc(key)}</h3>{mapping(value)}")
    return "".join(parts)


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, Mapping) for item in value)


def image(png: bytes, alt: str, caption: str | None = None) -> str:
    """A PNG inlined as a ``data:`` URI, with an optional caption."""
    data = base64.b64encode(png).decode("ascii")
    img = f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'
    if caption is None:
        return img
    return f"<figure>{img}<figcaption>{esc(caption)}</figcaption></figure>"


def section(ident: str, title: str, body: str) -> str:
    """A report section with an anchor id."""
    return f'<section id="{esc(ident)}"><h2>{esc(title)}</h2>{body}</section>'


def page(title: str, subtitle: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """The whole HTML document; ``sections`` are ``(id, title, body html)``."""
    nav = "".join(f'<a href="#{esc(i)}">{esc(t)}</a>' for i, t, _ in sections)
    body = "".join(section(i, t, b) for i, t, b in sections)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<link rel='icon' href='data:,'>"
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>"
        f"<nav>{nav}</nav><main>{body}</main></body></html>\n"
    )
