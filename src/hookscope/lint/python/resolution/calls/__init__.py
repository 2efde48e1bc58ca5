"""Strategies over calls: constructors, factories, registries, callees."""
