"""Strategies that read a receiver's use when its type is not resolved."""
