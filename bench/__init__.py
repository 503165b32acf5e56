"""Benchmarks: each module is a script run as ``python -m bench.<name>`` that prints its figures."""
