"""The ``hookscope`` command line: argument parsing and printing only."""
