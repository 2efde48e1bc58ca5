"""Helpers that find where code is called and what the calls pass (no strategy: strategies use them)."""
