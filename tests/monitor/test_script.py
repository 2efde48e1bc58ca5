"""monitor_script: the models a script runs are found and monitored, results land in out_dir."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from hookscope.monitor.script import monitor_script
from hookscope.store import read_run
from hookscope.zoo import SmallCNN


def a_training_script() -> None:
    """What a user's script does; it knows nothing about hookscope."""
    model = SmallCNN()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        loss = loss_fn(model(torch.randn(4, 3, 32, 32)), torch.randint(0, 10, (4,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        model(torch.randn(2, 3, 32, 32))
    probe = nn.Linear(2, 1)  # a second model
    probe(torch.randn(1, 2))


def test_monitor_script_writes_a_run_directory(tmp_path: Path) -> None:
    global_hooks = torch.nn.modules.module._global_forward_pre_hooks
    before = len(global_hooks)
    with monitor_script(tmp_path / "run") as watcher:
        a_training_script()
    assert len(global_hooks) == before
    assert [type(m.model).__name__ for m in watcher.monitors] == ["SmallCNN", "Linear"]
    frame = read_run(tmp_path / "run")
    assert sorted(frame.step.unique()) == [0, 1, 2, 3]
    phases = [set(frame[frame.step == step].phase) for step in range(4)]
    assert phases[:3] == [{"forward", "backward", "param"}] * 3
    assert phases[3] == {"forward"}  # the eval pass under no_grad
    assert read_run(tmp_path / "run", model=1).step.nunique() == 1  # the second model: monitor-1/
    assert any((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))
    # the loss module has no parameters: never a root
    assert all(not isinstance(m.model, nn.CrossEntropyLoss) for m in watcher.monitors)


def test_monitor_script_options_and_hooks_removed(tmp_path: Path) -> None:
    with monitor_script(tmp_path, every=2, grads=False) as watcher:
        model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        for _ in range(5):
            model(torch.randn(2, 3))
    assert sorted(read_run(tmp_path).step.unique()) == [0, 2, 4]
    assert watcher.monitors[0].every == 2
    assert not model[0]._forward_hooks and not model[0]._forward_pre_hooks
