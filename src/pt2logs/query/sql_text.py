"""SQL text built from values: a string literal and a quoted identifier, the one quoting rule every module
that writes SQL by hand (views, their sources, macros, serve's run scope) uses."""

from __future__ import annotations


def literal(s: str) -> str:
    """``s`` as a SQL string literal (quotes doubled)."""
    return "'" + s.replace("'", "''") + "'"


def ident(s: str) -> str:
    """``s`` as a quoted SQL identifier (double quotes doubled)."""
    return '"' + s.replace('"', '""') + '"'
