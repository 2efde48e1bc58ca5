"""``examples/notebook_tour.ipynb`` runs in a real Jupyter kernel and shows HTML tables.

The kernel is this virtual environment's Python, from a kernel spec written
under ``tmp_path`` (a ``python3`` kernel spec installed elsewhere on the
machine may point to another Python).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import hookscope
from hookscope.summary.format import totals_lines
from hookscope.zoo import SmallCNN
from tests.htmlpage import ALLOWED, Page

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook_tour.ipynb"
KERNEL = "hookscope-venv"

nbformat = pytest.importorskip("nbformat", reason="nbformat comes with the dev extra")
nbclient = pytest.importorskip("nbclient", reason="nbclient comes with the dev extra")
pytest.importorskip("ipykernel", reason="ipykernel comes with the dev extra")


def _kernel_spec(root: Path) -> None:
    """A kernel spec named `KERNEL` under ``root/kernels`` that starts this Python."""
    spec_dir = root / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")


def _html_outputs(nb: Any) -> dict[str, str]:
    """``{last line of the cell's source: its text/html output}`` for every cell with one."""
    found = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html")
            if html:
                found[cell.source.splitlines()[-1]] = html
    return found


def test_committed_notebook_has_no_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.slow
def test_notebook_shows_html_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    _kernel_spec(tmp_path / "jupyter")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    # timeout: per cell; startup_timeout: for the kernel to answer. The client owns the
    # kernel and shuts it down when the notebook is done or fails.
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=240,
        startup_timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    try:
        client.execute()
    except RuntimeError as exc:  # the kernel did not start (no ports, no sockets)
        if "Kernel didn't respond" in str(exc) or "Kernel died" in str(exc):
            pytest.skip(f"the Jupyter kernel could not start: {exc}")
        raise
    html = _html_outputs(nb)

    expected = hookscope.summary(SmallCNN(), torch.randn(8, 3, 32, 32))
    summary = Page(html["hookscope.summary(model, x)"])
    layers = summary.table_with("Layer")
    assert [row[1] for row in layers[1:]] == [row.type for row in expected.rows]
    for line in totals_lines(expected):
        assert line in summary.all_text

    doctor = Page(html["hookscope.doctor(buggy, x)"])
    hooks = doctor.table_with("status")
    assert hooks[1][0] == "head" and hooks[1][4] == "SKIPPED: .forward() called directly"
    assert doctor.table_with("call site")[1][1:4] == ["head", "Linear", "1"]

    compare = Page(html[next(line for line in html if line.startswith("hookscope.compare("))])
    rows = compare.table_with("sqnr_db")
    assert len(rows) > 10 and "culprit: " in compare.all_text

    step = Page(html["result"])
    forward = step.table_with("mean")
    assert [row[0] for row in forward[1:3]] == ["features.0", "features.1"]
    assert "Parameter gradients" in step.all_text

    monitor = Page(html["mon"])
    state = {row[0]: row[1] for row in monitor.tables[0]}
    assert state["state"] == "closed" and state["steps kept"] == "3"
    assert "step" in html["mon.to_pandas().head()"]  # pandas' own table
    for page in (summary, doctor, compare, step, monitor):
        assert page.tags <= ALLOWED
