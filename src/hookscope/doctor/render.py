"""The doctor's findings as plain-text tables and as HTML (pure string formatting).

The HTML tables (`hooks_html`, `bypasses_html`) take the JSON form of the
records (``to_dict()``, what ``doctor.json`` holds), so the HTML report of a
run directory and a notebook show the same tables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from hookscope import _html
from hookscope.doctor.records import DoctorFindings, HookRecord
from hookscope.hooks.bypass import BypassRecord

STATUS = {
    None: "ok",
    "forward_called_directly": "SKIPPED: .forward() called directly",
    "not_executed": "NOT FIRED: module never ran",
    "module_replaced": "NOT FIRED: module replaced",
    "backward_not_run": "NOT FIRED: no backward pass",
    "grad_disabled": "NOT FIRED: grad disabled",
    "inference_mode": "NOT FIRED: inference_mode",
    "nothing_requires_grad": "NOT FIRED: nothing requires grad",
    "output_not_in_loss": "NOT FIRED: output not in loss",
    "torchscript": "NOT FIRED: TorchScript",
    "compiled": "NOT FIRED: torch.compile",
    "unknown": "NOT FIRED",
}


def short_path(site: str) -> str:
    """``file:line`` with the file relative to the working directory when inside it."""
    path, sep, line = site.rpartition(":")
    if not sep:
        return site
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return site
    return f"{rel}:{line}" if not rel.startswith("..") else site


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns separated by two spaces, with a rule under the header."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def _module_label(name: str) -> str:
    return name if name else "(root)"


def _hook_lines(hooks: Sequence[HookRecord]) -> list[str]:
    if not hooks:
        return ["No hooks on this model."]
    rows = [
        [_module_label(h.module), h.kind, h.hook, str(h.fired), STATUS.get(h.code, "NOT FIRED")]
        for h in hooks
    ]
    lines = ["Hooks (by module)", *table(("module", "kind", "hook", "fired", "status"), rows)]
    for h in hooks:
        if h.code is None:
            continue
        lines.append("")
        lines.append(f"* {_module_label(h.module)} [{h.kind}] {h.hook}")
        lines.append(f"    why: {h.reason}")
        for site in h.call_sites:
            lines.append(f"    at:  {short_path(site)}")
        lines.append(f"    fix: {h.fix}")
    return lines


def _bypass_lines(bypasses: Sequence[BypassRecord]) -> list[str]:
    if not bypasses:
        return ["No direct .forward() calls."]
    by_site: dict[str, list[BypassRecord]] = {}
    for record in bypasses:
        by_site.setdefault(record.call_site, []).append(record)
    rows = []
    for site, records in by_site.items():
        for record in records:
            skipped = ", ".join(record.hooks_skipped) or "(none yet)"
            rows.append(
                [
                    short_path(site),
                    _module_label(record.module),
                    record.module_type,
                    str(record.count),
                    skipped,
                ]
            )
    lines = [
        "Direct .forward() calls (by call site): hooks on these modules do not run",
        *table(("call site", "module", "type", "count", "hooks skipped"), rows),
    ]
    for site, records in by_site.items():
        lines.append(f"  {short_path(site)}: {records[0].source or '?'}")
        lines.append(f"    fix: {records[0].fix}")
    return lines


def render_bypasses(bypasses: Sequence[BypassRecord]) -> str:
    """Bypass records grouped by call site (also used by ``hookscope run --doctor``)."""
    return "\n".join(_bypass_lines(bypasses))


def _verdict(report: DoctorFindings) -> str:
    if report.ok:
        return f"OK: all {len(report.hooks)} hook(s) fired; no direct .forward() calls."
    return (
        f"PROBLEMS: {len(report.problems)} of {len(report.hooks)} hook(s) did not fire or were "
        f"skipped; {len(report.bypasses)} direct .forward() call site(s)."
    )


def render_report(report: DoctorFindings) -> str:
    """The full report: a summary line, hooks by module, bypasses by call site."""
    mode = "forward + backward" if report.backward else "forward only"
    head = (
        f"hookscope doctor: {report.model} ({mode}; "
        f"{report.modules_executed}/{report.modules_total} modules ran)"
    )
    lines = [
        head,
        _verdict(report),
        "",
        *_hook_lines(report.hooks),
        "",
        *_bypass_lines(report.bypasses),
    ]
    return "\n".join(lines)


def render_html(report: DoctorFindings) -> str:
    """The verdict, hooks by module and direct calls by call site, as an HTML fragment."""
    mode = "forward + backward" if report.backward else "forward only"
    ran = f"{report.modules_executed}/{report.modules_total} modules ran"
    verdict = f'<p class="{"good" if report.ok else "bad"}">{_html.esc(_verdict(report))}</p>'
    return (
        f"<p>{_html.esc(report.model)} ({mode}; {_html.esc(ran)})</p>{verdict}"
        + hooks_html([hook.to_dict() for hook in report.hooks])
        + bypasses_html([record.to_dict() for record in report.bypasses])
    )


def hooks_html(hooks: Sequence[Mapping[str, Any]]) -> str:
    """The hooks table of JSON hook records: status, and why and what to change."""
    if not hooks:
        return "<h3>Hooks (by module)</h3>" + _html.absent("no hooks on this model")
    rows = [
        {
            "module": hook.get("module") or "(root)",
            "kind": hook.get("kind"),
            "hook": hook.get("hook"),
            "fired": hook.get("fired"),
            "status": STATUS.get(hook.get("code"), "NOT FIRED"),
            "why / fix": " — ".join(str(x) for x in (hook.get("reason"), hook.get("fix")) if x),
        }
        for hook in hooks
    ]
    return f"<h3>Hooks by module ({len(rows)})</h3>" + _html.table(rows)


def bypasses_html(bypasses: Sequence[Mapping[str, Any]]) -> str:
    """The direct ``.forward()`` calls of JSON bypass records, one row per call site and module."""
    if not bypasses:
        return ""
    rows = [
        {
            "call site": short_path(str(record.get("call_site", "?"))),
            "module": record.get("module") or "(root)",
            "type": record.get("module_type") or record.get("type"),
            "count": record.get("count"),
            "hooks skipped": ", ".join(record.get("hooks_skipped") or []) or "(none yet)",
            "fix": record.get("fix", ""),
        }
        for record in bypasses
    ]
    return f"<h3>Direct .forward() calls by call site ({len(rows)})</h3>" + _html.table(rows)
