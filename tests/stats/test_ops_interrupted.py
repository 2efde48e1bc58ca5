"""A first Monitor interrupted while hookscope's torch operators are defined breaks no later one.

Each trial is a fresh interpreter: SIGINT lands at the ``k``-th function call
made while `hookscope.stats.gradrow` or `hookscope.stats.rowop` runs its
module body (where the ops are defined), then a second Monitor must work.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import _thread, sys
    import torch
    from torch import nn
    import hookscope

    model = nn.Linear(3, 2)
    x = torch.randn(4, 3)
    target = int(sys.argv[1])
    seen = [0]

    def in_op_module(frame):
        while frame is not None:
            name = frame.f_code.co_filename
            if frame.f_code.co_name == "<module>" and name.endswith(("gradrow.py", "rowop.py")):
                return True
            frame = frame.f_back
        return False

    def profile(frame, event, arg):
        if event == "call" and in_op_module(frame):
            seen[0] += 1
            if seen[0] == target:
                sys.setprofile(None)
                _thread.interrupt_main()

    def run():
        with hookscope.Monitor(model) as mon:
            model(x).sum().backward()
            mon.step()

    try:
        sys.setprofile(profile)
        run()
    except KeyboardInterrupt:
        print("interrupted")
    finally:
        sys.setprofile(None)
    run()
    print("ok", seen[0])
    """
)


@pytest.mark.parametrize(
    "target", [pytest.param(t, marks=pytest.mark.slow) for t in (3, 40, 400, 4200)] + [2500]
)
def test_monitor_works_after_first_one_was_interrupted_defining_ops(target: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(target)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok" in done.stdout
