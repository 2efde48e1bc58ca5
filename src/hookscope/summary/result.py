"""`ModelSummary`: the summary's data with its renderings (text, Markdown, CSV, HTML)."""

from __future__ import annotations

from hookscope._html import esc
from hookscope.summary.format import (
    human_bytes,
    human_count,
    render,
    render_csv,
    render_html,
    render_markdown,
    render_table,
)
from hookscope.summary.records import SummaryData, SummaryFormat


class ModelSummary(SummaryData):
    """Result of `hookscope.summary`; ``str()`` is the table, a notebook shows it as HTML.

    Every field is `SummaryData`'s (a frozen dataclass); this class adds the
    renderings of `hookscope.summary.format`.
    """

    def to_table(self) -> str:
        """The plain-text table (what ``str()`` gives)."""
        return render_table(self)

    def to_markdown(self) -> str:
        """A Markdown table and totals."""
        return render_markdown(self)

    def to_csv(self) -> str:
        """One CSV line per row with raw numbers."""
        return render_csv(self)

    def to_html(self) -> str:
        """The table and totals as an HTML fragment (as in the HTML report)."""
        return render_html(self)

    def render(self, fmt: SummaryFormat = "table") -> str:
        """The summary in ``fmt``: ``"table"``, ``"json"``, ``"csv"`` or ``"markdown"``."""
        return render(self, fmt)

    def __str__(self) -> str:
        return self.to_table()

    def __repr__(self) -> str:
        return (
            f"<ModelSummary {self.model}: {len(self.rows)} rows, "
            f"{self.total_params:,} params ({human_bytes(self.param_bytes)}), "
            f"{human_count(self.macs)} MACs on {self.device}>"
        )

    def _repr_html_(self) -> str:
        title = f"<p><b>{esc(self.model)}</b> — hookscope summary</p>"
        return title + self.to_html()
