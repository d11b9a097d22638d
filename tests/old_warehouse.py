"""Make a warehouse look written by an older pt2logs: its runs files without commit records (what a
test that rewrites data files the way an older version wrote them needs; docs/warehouse.md)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from pt2logs.manifest import KEY


def without_records(wh: Path) -> None:
    """Drop the ``pt2logs.files`` commit record of every runs file (its transactions read as listed)."""
    for f in Path(wh).glob("runs/*/*.parquet"):
        t = pq.read_table(f, partitioning=None)
        meta = {k: v for k, v in (t.schema.metadata or {}).items() if k != KEY}
        pq.write_table(t.replace_schema_metadata(meta), f)
