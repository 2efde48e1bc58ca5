"""The doctor: explains every hook that silently did not fire, and where.

``hookscope.doctor(model, *inputs)`` runs the model once, counts every hook
on it (whoever registered it) and watches for ``module.forward(x)`` calls
that skip ``__call__``; the report says, for each hook that did not fire,
why, and what to change. `graph_breaks(model, *inputs)` lists the graph
breaks of a compiled call and which of them hookscope's hooks caused.
"""

from __future__ import annotations

from hookscope.doctor.compiled import GraphBreak, GraphBreakReport, graph_breaks
from hookscope.doctor.core import doctor
from hookscope.doctor.records import DoctorFindings, HookRecord, ReasonCode
from hookscope.doctor.render import render_bypasses, render_report
from hookscope.doctor.report import DoctorReport
from hookscope.hooks.bypass import BypassRecord

__all__ = [
    "BypassRecord",
    "DoctorFindings",
    "DoctorReport",
    "GraphBreak",
    "GraphBreakReport",
    "HookRecord",
    "ReasonCode",
    "doctor",
    "graph_breaks",
    "render_bypasses",
    "render_report",
]
