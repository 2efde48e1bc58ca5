"""`Comparison`: a comparison's records with their renderings (text, Markdown, JSON, HTML)."""

from __future__ import annotations

from hookscope._html import esc
from hookscope.compare.format import render, render_html
from hookscope.compare.records import ComparisonData


class Comparison(ComparisonData):
    """Result of `hookscope.compare`; ``str()`` is the table, a notebook shows it as HTML.

    Every field is `ComparisonData`'s (a frozen dataclass); this class adds the
    renderings of `hookscope.compare.format`.
    """

    def render(self, fmt: str = "table") -> str:
        """The comparison as ``"table"``, ``"markdown"`` or ``"json"`` text."""
        return render(self, fmt)

    def to_html(self) -> str:
        """Sides, tolerances, the culprit and the rows (culprit first) as an HTML fragment."""
        return render_html(self.to_dict())

    def __str__(self) -> str:
        return self.render("table")

    def __repr__(self) -> str:
        culprit = self.culprit
        found = "no culprit" if culprit is None else f"culprit {culprit.label}"
        return (
            f"<Comparison {self.mode} {self.label_a} vs {self.label_b}: "
            f"{len(self.rows)} module call(s), {len(self.exceeded)} outside the tolerance, {found}>"
        )

    def _repr_html_(self) -> str:
        title = (
            f"<p><b>{esc(self.label_a)}</b> vs <b>{esc(self.label_b)}</b> — hookscope compare</p>"
        )
        return title + self.to_html()
