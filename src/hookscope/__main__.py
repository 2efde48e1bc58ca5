"""``python -m hookscope``."""

from __future__ import annotations

from hookscope.cli.main import entry

entry()
