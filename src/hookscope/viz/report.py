"""The self-contained HTML report of a monitor run directory.

One HTML file with no external URLs: plots and feature maps are inlined as
PNG ``data:`` URIs. Sections (anchor ids in brackets): overview
(``overview``), model summary (``summary``), alerts (``alerts``), first
non-finite value (``nonfinite``), ranks and other writers side by side
(``ranks``, `hookscope.viz.ranks`), gradient flow (``gradient-flow``),
activation statistics (``activations``), feature maps (``featuremaps``) and
doctor findings (``doctor``). A part the run did not produce still gets its
section, saying what was absent. A run directory with a ``comparison.json``
(``hookscope compare --format json``) also gets a ``comparison`` section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from hookscope._files import write_text
from hookscope.errors import MissingExtraError, UsageError
from hookscope.viz import html as h
from hookscope.viz._mpl import png_bytes
from hookscope.viz.compare import comparison_html, load_comparisons
from hookscope.viz.plots import activation_stats_plot, gradient_flow_plot
from hookscope.viz.ranks_html import ranks_section
from hookscope.viz.records import module_order
from hookscope.viz.rundir import DOCTOR, MONITOR, SUMMARY, RunData, load_run
from hookscope.viz.sections import doctor_section, summary_section

#: Section ids in page order.
SECTIONS = (
    "overview",
    "summary",
    "alerts",
    "nonfinite",
    "ranks",
    "gradient-flow",
    "activations",
    "featuremaps",
    "doctor",
)

#: Layers per activation-statistics figure (more would make an unreadable legend).
LAYERS_PER_PLOT = 12
#: Figures drawn at most; the per-layer table below them lists every layer.
MAX_ACTIVATION_PLOTS = 8

_LAST_STEP_STATS = ("mean", "std", "min", "max", "absmax", "zero_frac", "nan_count", "inf_count")


@dataclass(frozen=True)
class ReportResult:
    """What `write_report` wrote.

    Attributes:
        path: the HTML file.
        sections: section ids in the page (all of `SECTIONS`, then ``comparison`` if saved).
        missing: run-directory parts that were absent.
        notes: problems met (skipped lines, plots left out and why).
    """

    path: Path
    sections: tuple[str, ...]
    missing: tuple[str, ...]
    notes: tuple[str, ...]


def _plot(draw: Callable[[], Any], what: str, notes: list[str]) -> str:
    try:
        fig = draw()
    except (UsageError, MissingExtraError) as exc:
        notes.append(f"{what} left out: {exc}")
        return h.absent(f"{what} left out: {exc}")
    return h.image(png_bytes(fig), what)


def _count(run: RunData, phase: str) -> int:
    return len({row["module"] for row in run.rows if row["phase"] == phase})


def _overview(run: RunData) -> str:
    pairs: list[tuple[str, Any]] = [
        ("run directory", str(run.path.resolve())),
        ("steps recorded", run.steps),
        ("modules with activation statistics", _count(run, "forward")),
        ("modules with gradient norms", _count(run, "backward")),
        ("parameters with gradient norms", _count(run, "param")),
        ("records", run.records or len(run.rows)),
        ("alerts", run.alert_total or len(run.alerts)),
        ("absent parts", ", ".join(run.missing) or "none"),
    ]
    if run.width > 1:
        pairs.append(
            ("plots", f"downsampled: each point is a bin of {run.width} steps (mean, min-max band)")
        )
    body = h.key_values(pairs)
    if run.tensorboard is not None:
        command = f"tensorboard --logdir {run.tensorboard}"
        body += f"<p>TensorBoard logs: open with <code>{h.esc(command)}</code></p>"
    if run.notes:
        body += "<h3>Notes</h3><ul>" + "".join(f"<li>{h.esc(n)}</li>" for n in run.notes) + "</ul>"
    return body


def _alerts(run: RunData) -> str:
    if run.rows == () and run.steps == 0:
        return h.absent(f"no monitor data ({MONITOR}/ or monitor.jsonl absent or empty)")
    if not run.alerts:
        return f'<p class="good">No alerts in {run.steps} step(s).</p>'
    counts = Counter(
        f"{alert.get('rule', '?')} ({alert['phase']})"
        if alert.get("phase")
        else str(alert.get("rule", "?"))
        for alert in run.alerts
    )
    summary = ", ".join(f"{rule}: {n}" for rule, n in counts.most_common())
    total = max(run.alert_total, len(run.alerts))
    shown = f", the first {len(run.alerts)} below" if total > len(run.alerts) else ""
    columns = ["step", "phase", "module", "tensor", "value", "rule"]
    if any("writer" in alert for alert in run.alerts):
        columns.append("writer")
    return f'<p class="bad">{total} alert(s){shown} — {h.esc(summary)}</p>' + h.table(
        list(run.alerts), columns
    )


def _nonfinite(run: RunData) -> str:
    if run.steps == 0:
        return h.absent(f"no monitor data ({MONITOR}/ or monitor.jsonl absent or empty)")
    first = run.first_nonfinite
    if not first:
        return f'<p class="good">No NaN or Inf seen in {run.steps} step(s).</p>'
    where = f"{first.get('module', '?')} ({first.get('phase', '?')}, {first.get('tensor', '?')})"
    return (
        f'<p class="bad">First NaN/Inf at step {h.esc(first.get("step", "?"))} in '
        f"{h.esc(where)}</p>" + h.key_values(first.items())
    )


def _activations(run: RunData, notes: list[str]) -> str:
    if run.steps == 0:
        return h.absent(f"no monitor data ({MONITOR}/ or monitor.jsonl absent or empty)")
    forward = [row for row in run.rows if row["phase"] == "forward"]
    body = _activation_plots(run, forward, notes)
    last_rows = [row for row in (run.last_rows or run.rows) if row["phase"] == "forward"]
    if last_rows:
        last = max(row["step"] for row in last_rows)
        table: dict[tuple[str, str], dict[str, Any]] = {}
        for row in last_rows:
            if row["step"] == last and row["stat"] in _LAST_STEP_STATS:
                key = (row["module"], row["tensor"])
                table.setdefault(key, {"module": key[0], "tensor": key[1]})[row["stat"]] = row[
                    "value"
                ]
        columns = [
            "module",
            "tensor",
            *[s for s in _LAST_STEP_STATS if any(s in r for r in table.values())],
        ]
        body += f"<h3>Per-layer statistics at step {last}</h3>" + h.table(
            list(table.values()), columns
        )
    return body


def _activation_plots(run: RunData, forward: list[dict[str, Any]], notes: list[str]) -> str:
    """One figure per `LAYERS_PER_PLOT` layers, in the order they ran, so no layer is dropped."""
    layers = module_order(forward)
    chunks = [
        layers[start : start + LAYERS_PER_PLOT] for start in range(0, len(layers), LAYERS_PER_PLOT)
    ] or [[]]
    body = ""
    for index, chunk in enumerate(chunks[:MAX_ACTIVATION_PLOTS]):
        what = "activation statistics"
        if len(chunks) > 1:
            last = index * LAYERS_PER_PLOT + len(chunk)
            what += f", layers {index * LAYERS_PER_PLOT + 1}-{last} of {len(layers)}"
        title = what[0].upper() + what[1:] + " over steps"
        body += _plot(partial(_activation_plot, run, chunk, title), what, notes)
    if len(chunks) > MAX_ACTIVATION_PLOTS:
        drawn = MAX_ACTIVATION_PLOTS * LAYERS_PER_PLOT
        body += h.absent(
            f"plots show the first {drawn} of {len(layers)} layers; the table below lists all"
        )
    return body


def _activation_plot(run: RunData, modules: list[str], title: str) -> Any:
    wanted = set(modules)
    rows = [
        row
        for row in run.rows
        if row["phase"] == "forward" and (not modules or row["module"] in wanted)
    ]
    return activation_stats_plot(rows, modules=modules or None, title=title)


def _featuremaps(run: RunData, notes: list[str]) -> str:
    if not run.featuremaps:
        return h.absent("no feature-map grids (featuremaps/*.png absent)")
    figures = []
    for path in run.featuremaps:
        try:
            figures.append(h.image(path.read_bytes(), f"feature maps {path.stem}", path.stem))
        except OSError as exc:
            notes.append(f"featuremaps/{path.name} is unreadable ({exc.strerror}); left out")
    return f'<div class="grid">{"".join(figures)}</div>'


def _doctor(run: RunData, notes: list[str]) -> str:
    if run.doctor is None:
        return h.absent(f"no doctor results ({DOCTOR} absent)")
    return doctor_section(run.doctor, notes)


def render_report(run: RunData, *, title: str = "hookscope report") -> tuple[str, tuple[str, ...]]:
    """The report page for a loaded run; returns ``(html, notes)``."""
    notes: list[str] = list(run.notes)
    gradflow = (
        _plot(lambda: gradient_flow_plot(run.rows), "gradient flow", notes)
        if run.steps
        else h.absent(f"no monitor data ({MONITOR}/ or monitor.jsonl absent or empty)")
    )
    summary = (
        summary_section(run.summary, notes)
        if run.summary is not None
        else h.absent(f"no {SUMMARY}")
    )
    sections = [
        ("overview", "Overview", _overview(run)),
        ("summary", "Model summary", summary),
        ("alerts", "Alerts", _alerts(run)),
        ("nonfinite", "First non-finite value", _nonfinite(run)),
        ("ranks", "Ranks", ranks_section(run.writers)),
        ("gradient-flow", "Gradient flow", gradflow),
        ("activations", "Activation statistics", _activations(run, notes)),
        ("featuremaps", "Feature maps", _featuremaps(run, notes)),
        ("doctor", "Doctor", _doctor(run, notes)),
    ]
    if comparisons := load_comparisons(run.path):
        sections.append(("comparison", "Comparison", comparison_html(comparisons)))
    subtitle = f"{run.path} — {run.steps} step(s)"
    return h.page(title, subtitle, sections), tuple(notes)


def write_report(
    run_dir: str | Path, out: str | Path | None = None, *, title: str = "hookscope report"
) -> ReportResult:
    """Write the self-contained HTML report of ``run_dir``.

    Args:
        run_dir: a monitor run directory (see `hookscope.viz.rundir`).
        out: the HTML file to write (default ``run_dir/report.html``).
        title: page title.

    Raises:
        UsageError: ``run_dir`` is not a run directory, or ``out`` cannot be
            written (a directory, a missing permission); an existing ``out``
            is then left as it was, never half-written.
    """
    run = load_run(run_dir)
    page, notes = render_report(run, title=title)
    path = Path(out) if out is not None else run.path / "report.html"
    write_text(path, page, "the report")
    extra = ("comparison",) if 'id="comparison"' in page else ()
    return ReportResult(path, SECTIONS + extra, run.missing, notes)
