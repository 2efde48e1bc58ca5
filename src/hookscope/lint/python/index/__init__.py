"""What the first pass reads from a Python file's bytes for the project index."""
