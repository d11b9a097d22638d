"""The version of pt2logs (one place: the package, the CLI and the warehouse metadata read it here)."""

__version__ = "0.1.0"
