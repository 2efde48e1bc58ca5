"""Strategies over values: collections, their elements, guards and declarations."""
