"""Strategies over what other code passes: callers, constructions, instances."""
