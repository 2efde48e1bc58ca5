"""Activation and gradient monitoring: statistics per layer, alerts, the first NaN/Inf.

`Monitor` hooks a model through a `hookscope.session`, reduces every selected
tensor on its device, and brings a step's statistics to the host in one
transfer in `Monitor.step`. `monitor_script` (in `hookscope.monitor.script`)
monitors the models a script runs, for ``hookscope run --monitor``.
"""

from __future__ import annotations

from hookscope.monitor.alerts import Thresholds
from hookscope.monitor.core import Monitor
from hookscope.monitor.options import is_activation
from hookscope.monitor.records import Alert, NonFinite, Record, StepResult, TensorInfo

__all__ = [
    "Alert",
    "Monitor",
    "NonFinite",
    "Record",
    "StepResult",
    "TensorInfo",
    "Thresholds",
    "is_activation",
]
