"""Strategies over calls: constructors, factories, partials, hooks, rewriters."""
