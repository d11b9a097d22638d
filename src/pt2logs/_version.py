"""The package version, in a module of its own: modules the package imports lazily (ingest's commit)
read it here, so importing it does not make them part of a cycle through ``pt2logs/__init__``."""

__version__ = "0.1.0"
