"""Parsing the HTML that hookscope's results show in a notebook (tests only)."""

from __future__ import annotations

from html.parser import HTMLParser

#: Every tag the renderings may produce.
ALLOWED = {"p", "b", "code", "h3", "table", "thead", "tbody", "tr", "th", "td", "ul", "li"}


class Page(HTMLParser):
    """Tables as lists of rows of cell texts; every tag seen; the text."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.tables: list[list[list[str]]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)

    def table_with(self, header: str) -> list[list[str]]:
        """The first table whose first row holds ``header``."""
        return next(t for t in self.tables if t and header in t[0])
