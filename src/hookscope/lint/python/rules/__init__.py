"""The Python rules and what they receive."""
