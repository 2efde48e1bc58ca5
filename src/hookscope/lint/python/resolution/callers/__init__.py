"""Strategies over what other code passes: callers, instances, autograd ``apply``."""
