"""accelerate loops: close one Monitor step per optimizer step (``pip install hookscope[transformers]``).

With ``accelerator.accumulate(model)``, ``optimizer.step()`` only updates the
weights when ``accelerator.sync_gradients`` is true; `sync_step` closes the
Monitor's step exactly then, so each recorded step is one update with its
whole accumulated gradient::

    accelerator = Accelerator(gradient_accumulation_steps=2, mixed_precision="bf16")
    model, optimizer, data = accelerator.prepare(model, optimizer, data)
    with hookscope.Monitor(accelerator.unwrap_model(model)) as mon:
        for batch in data:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            sync_step(mon, accelerator)

Monitor the unwrapped model (``accelerator.unwrap_model``) so that names are
the model's own, also under DDP. This module does not import accelerate: it
only reads the accelerator's ``sync_gradients``.
"""

from __future__ import annotations

from typing import Any

from hookscope.errors import UsageError
from hookscope.monitor import Monitor
from hookscope.monitor.records import StepResult


def sync_step(monitor: Monitor, accelerator: Any, *, step: int | None = None) -> StepResult | None:
    """Close ``monitor``'s step if this iteration updated the weights, else leave it open.

    Call it once per iteration, after ``optimizer.step()`` (outside or at the
    end of ``with accelerator.accumulate(model):``).

    Args:
        monitor: an open `hookscope.Monitor`.
        accelerator: the ``accelerate.Accelerator`` (anything with ``sync_gradients``).
        step: the number for the step (default: the Monitor's own count, 0 first).

    Returns:
        The step's results when a step was closed and recorded, else None.

    Raises:
        UsageError: ``accelerator`` has no boolean ``sync_gradients``.
    """
    synced = getattr(accelerator, "sync_gradients", None)
    if not isinstance(synced, bool):
        raise UsageError(f"sync_step needs an accelerate.Accelerator, got {accelerator!r}")
    if not synced:
        return None
    return monitor.step(step=step)
