"""Benchmarks for pt2logs (not part of the unit tests): `python -m bench --help`."""
