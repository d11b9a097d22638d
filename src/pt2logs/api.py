"""What a Python user imports: ingest, connect, table, capture."""

from __future__ import annotations

from typing import Any

from pt2logs.ingestion import ingest
from pt2logs.query.views import connect
from pt2logs.recording.capture import capture
from pt2logs.store.warehouse import DEFAULT_WAREHOUSE


def table(name: str, warehouse: str = DEFAULT_WAREHOUSE) -> Any:
    """A table of the warehouse as a polars LazyFrame (live rows only)."""
    import polars as pl

    from pt2logs.tables import TABLES

    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; tables: {', '.join(sorted(TABLES))}")
    con = connect(warehouse)
    from pt2logs.query.views import arrow_table

    arrow = arrow_table(con, f'SELECT * FROM "{name}"')
    return pl.from_arrow(arrow).lazy()


__all__ = ["capture", "ingest", "connect", "table"]
