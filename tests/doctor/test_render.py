"""The report's text table (golden output) and its JSON form.

Regenerate the golden file on purpose only: HOOKSCOPE_REGEN=1 pytest tests/doctor/test_render.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hookscope.doctor import BypassRecord, DoctorReport, HookRecord, render_bypasses

GOLDEN = Path(__file__).parent / "golden" / "report.txt"

BYPASS = BypassRecord(
    module="fc",
    names=("fc",),
    module_type="Linear",
    call_site="/abs/net.py:12",
    source="return self.fc.forward(x).relu()  # planted",
    count=3,
    hooks_skipped=("forward_pre:torch.nn.utils.prune.L1Unstructured.__call__",),
)
REPORT = DoctorReport(
    model="Net",
    hooks=(
        HookRecord("", ("",), "forward", "user.log_output", "/abs/user.py:3", False, 1),
        HookRecord(
            "fc",
            ("fc",),
            "forward_pre",
            "torch.nn.utils.prune.L1Unstructured.__call__",
            None,
            False,
            0,
            code="forward_called_directly",
            reason="'fc'.forward was invoked directly (3 of 3 run(s))",
            fix="return self.fc(x).relu()",
            call_sites=("/abs/net.py:12",),
        ),
        HookRecord(
            "aux",
            ("aux",),
            "backward",
            "user.grad_norm",
            "/abs/user.py:9",
            True,
            0,
            code="not_executed",
            reason="'aux' never executed in this run",
            fix="check the condition that selects this module",
        ),
    ),
    bypasses=(BYPASS,),
    backward=True,
    modules_executed=2,
    modules_total=3,
)


def test_report_table_matches_golden() -> None:
    text = str(REPORT) + "\n"
    if os.environ.get("HOOKSCOPE_REGEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_fix_strips_the_trailing_comment_and_rewrites_the_call() -> None:
    assert BYPASS.fix == "return self.fc(x).relu()"
    no_source = BypassRecord("block.fc", ("block.fc",), "Linear", "?:0", "", 1, ())
    assert no_source.fix == "call the module, fc(x), instead of fc.forward(x)"


def test_to_dict_is_json_and_keeps_every_field() -> None:
    data = json.loads(json.dumps(REPORT.to_dict()))
    assert data["ok"] is False
    assert [h["code"] for h in data["hooks"]] == [None, "forward_called_directly", "not_executed"]
    assert data["hooks"][1]["call_sites"] == ["/abs/net.py:12"]
    assert data["bypasses"][0]["fix"] == "return self.fc(x).relu()"
    assert REPORT.problems == REPORT.hooks[1:]


def test_bypasses_alone_render_grouped_by_call_site() -> None:
    other = BypassRecord(
        "head", ("head",), "Linear", "/abs/net.py:20", "self.head.forward(y)", 1, ()
    )
    text = render_bypasses([BYPASS, other, BYPASS])
    assert text.count("/abs/net.py:12: return self.fc.forward(x).relu()") == 1
    assert text.index("/abs/net.py:12  fc") < text.index("/abs/net.py:20  head")
