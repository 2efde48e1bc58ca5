"""`DoctorReport`: the doctor's findings with their renderings (text and HTML)."""

from __future__ import annotations

from hookscope.doctor.records import DoctorFindings
from hookscope.doctor.render import render_html, render_report


class DoctorReport(DoctorFindings):
    """What `hookscope.doctor` found; ``str()`` is the report, a notebook shows it as HTML.

    Every field is `DoctorFindings`'s (a frozen dataclass); this class adds the
    renderings of `hookscope.doctor.render`.
    """

    def to_html(self) -> str:
        """The verdict, hooks by module and direct calls by call site, as an HTML fragment."""
        return render_html(self)

    def __str__(self) -> str:
        return render_report(self)

    def __repr__(self) -> str:
        verdict = "ok" if self.ok else f"{len(self.problems)} problem(s)"
        return (
            f"<DoctorReport {self.model}: {len(self.hooks)} hook(s), {verdict}, "
            f"{len(self.bypasses)} direct .forward() call site(s)>"
        )

    def _repr_html_(self) -> str:
        return "<p><b>hookscope doctor</b></p>" + self.to_html()
